// A Java participant in an Apache Curator election, driven line by line by the interoperability
// tests. Arguments: <connect> <path> <id> latch|selector. Exits when its standard input closes.
//   leading        -> "yes" | "no"
//   participants   -> "participants <id>:<leader?>,..."
//   release        -> "released" (selector: ends the current leadership; latch: closes it)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.RetryNTimes;

public final class ElectionPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        String path = args[1];
        String id = args[2];
        boolean latchMode = args[3].equals("latch");
        LeaderLatch latch = null;
        LeaderSelector selector = null;
        AtomicBoolean leading = new AtomicBoolean();
        Semaphore release = new Semaphore(0);
        if (latchMode) {
            latch = new LeaderLatch(client, path, id);
            latch.start();
        } else {
            selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    leading.set(true);
                    try {
                        release.acquire();
                    } finally {
                        leading.set(false);
                    }
                }
            });
            selector.setId(id);
            selector.start();
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                switch (line.trim()) {
                    case "leading":
                        boolean now = latchMode ? latch.hasLeadership() : leading.get();
                        answer = now ? "yes" : "no";
                        break;
                    case "participants":
                        Collection<Participant> all = latchMode ? latch.getParticipants() : selector.getParticipants();
                        List<String> parts = new ArrayList<>();
                        for (Participant p : all) {
                            parts.add(p.getId() + ":" + p.isLeader());
                        }
                        answer = "participants " + String.join(",", parts);
                        break;
                    case "release":
                        if (latchMode) {
                            latch.close();
                        } else {
                            release.release();
                        }
                        answer = "released";
                        break;
                    default:
                        answer = "error unknown command " + line;
                }
            } catch (Exception e) {
                answer = "error " + e;
            }
            System.out.println(answer);
            System.out.flush();
        }
        if (selector != null) {
            selector.close();
        }
        client.close();
    }
}
