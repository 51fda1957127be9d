// A Java process taking leases of an Apache Curator InterProcessSemaphoreV2, driven line by line
// by the interoperability tests. Arguments: <connect> <path> <max-leases>. Exits when its
// standard input closes.
//   acquire <ms>   -> "acquired" | "timeout"
//   release        -> "released" (returns the oldest lease it holds)
//   participants   -> "participants <name>,<name>..."

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

public final class SemaphorePeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, args[1], Integer.parseInt(args[2]));
        ArrayDeque<Lease> held = new ArrayDeque<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            try {
                switch (words[0]) {
                    case "acquire":
                        Lease lease = semaphore.acquire(Long.parseLong(words[1]), TimeUnit.MILLISECONDS);
                        if (lease == null) {
                            answer = "timeout";
                        } else {
                            held.add(lease);
                            answer = "acquired";
                        }
                        break;
                    case "release":
                        semaphore.returnLease(held.poll());
                        answer = "released";
                        break;
                    case "participants":
                        answer = "participants " + String.join(",", semaphore.getParticipantNodes());
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
        client.close();
    }
}
