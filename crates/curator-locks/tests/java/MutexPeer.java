// A Java process holding an Apache Curator lock, driven line by line by the interoperability
// tests. Arguments: <connect> <path> [mutex|read|write] (the last two are the sides of an
// InterProcessReadWriteLock). Exits when its standard input closes.
//   acquire <ms>   -> "acquired" | "timeout"
//   release        -> "released"
//   participants   -> "participants <node>,<node>..."

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;

public final class MutexPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        String kind = args.length > 2 ? args[2] : "mutex";
        InterProcessMutex mutex;
        if (kind.equals("mutex")) {
            mutex = new InterProcessMutex(client, args[1]);
        } else {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, args[1]);
            mutex = kind.equals("read") ? rw.readLock() : rw.writeLock();
        }
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
                        answer = mutex.acquire(Long.parseLong(words[1]), TimeUnit.MILLISECONDS) ? "acquired" : "timeout";
                        break;
                    case "release":
                        mutex.release();
                        answer = "released";
                        break;
                    case "participants":
                        answer = "participants " + String.join(",", mutex.getParticipantNodes());
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
