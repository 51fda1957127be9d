// A Java process holding an Apache Curator lock, driven line by line by the interoperability
// tests. Arguments: <connect> <path> [mutex|read|write] (the last two are the sides of an
// InterProcessReadWriteLock). Over TLS when started with ZooKeeper's TLS system properties
// (curator_test::JvmOptions::zookeeper_tls).
//   acquire <ms>   -> "acquired" | "timeout"
//   release        -> "released"
//   participants   -> "participants <node>,<node>..."
//   whoami         -> "whoami <scheme>:<user>,..." (ZooKeeper's whoAmI)
//   take_turns <n> <holder-file> <log-file> <ms> <wait-on-last: yes|no>
//                  -> "took <n>" | "overlap <holder-file's content>" | "error ..."
//     n times: acquire; create <holder-file> exclusively (it exists only while someone holds the
//     lock, so finding it means two holders at once); append "java" to <log-file>; wait (on a
//     children watch) until another participant is queued, except in the last turn with "no";
//     delete <holder-file>; release. Every wait is bounded by <ms>.
// Commands run one at a time on a worker thread; the main thread only reads standard input, so
// the process exits as soon as its input closes, even in the middle of a command.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.ClientInfo;

public final class MutexPeer {
    private static CuratorFramework client;
    private static InterProcessMutex mutex;
    private static String lockPath;

    public static void main(String[] args) throws Exception {
        client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        lockPath = args[1];
        String kind = args.length > 2 ? args[2] : "mutex";
        if (kind.equals("mutex")) {
            mutex = new InterProcessMutex(client, lockPath);
        } else {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, lockPath);
            mutex = kind.equals("read") ? rw.readLock() : rw.writeLock();
        }
        // One worker: InterProcessMutex is re-entrant per thread, so every command must run on
        // the same thread for "release" to release what "acquire" took. It also waits for the
        // connection, so the main thread reads standard input from the start.
        ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, "mutex-peer");
            thread.setDaemon(true);
            return thread;
        });
        worker.execute(() -> {
            boolean connected;
            try {
                connected = client.blockUntilConnected(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                connected = false;
            }
            reply(connected ? "ready" : "error not connected to " + args[0]);
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String command = line;
            worker.execute(() -> {
                String answer;
                try {
                    answer = answer(command.trim().split(" "));
                } catch (Exception e) {
                    answer = "error " + e;
                }
                reply(answer);
            });
        }
        // Standard input closed: the test is done (or gone). Closing the client ends the session,
        // so its lock nodes vanish at once; a command still running is abandoned, and so is a
        // close that takes more than two seconds (no server to answer).
        worker.shutdownNow();
        Thread closer = new Thread(client::close, "close");
        closer.setDaemon(true);
        closer.start();
        closer.join(2000);
        System.exit(0);
    }

    private static void reply(String answer) {
        System.out.println(answer);
        System.out.flush();
    }

    private static String answer(String[] words) throws Exception {
        switch (words[0]) {
            case "acquire":
                return mutex.acquire(Long.parseLong(words[1]), TimeUnit.MILLISECONDS) ? "acquired" : "timeout";
            case "release":
                mutex.release();
                return "released";
            case "participants":
                return "participants " + String.join(",", mutex.getParticipantNodes());
            case "whoami": {
                List<String> identities = new ArrayList<>();
                for (ClientInfo info : client.getZookeeperClient().getZooKeeper().whoAmI()) {
                    identities.add(info.getAuthScheme() + ":" + info.getUser());
                }
                return "whoami " + String.join(",", identities);
            }
            case "take_turns":
                return takeTurns(Integer.parseInt(words[1]), Paths.get(words[2]), Paths.get(words[3]),
                        Long.parseLong(words[4]), words[5].equals("yes"));
            default:
                return "error unknown command " + String.join(" ", words);
        }
    }

    private static String takeTurns(int turns, Path holder, Path log, long timeoutMs, boolean waitOnLast)
            throws Exception {
        for (int turn = 0; turn < turns; turn++) {
            if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
                return "error turn " + turn + ": acquire timed out";
            }
            try {
                try {
                    Files.write(holder, "java".getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE_NEW,
                            StandardOpenOption.WRITE);
                } catch (FileAlreadyExistsException e) {
                    return "overlap " + new String(Files.readAllBytes(holder), StandardCharsets.UTF_8);
                }
                Files.write(log, "java\n".getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
                if ((turn + 1 < turns || waitOnLast) && !awaitAnotherParticipant(timeoutMs)) {
                    return "error turn " + turn + ": nobody queued behind";
                }
                Files.delete(holder);
            } finally {
                mutex.release();
            }
        }
        return "took " + turns;
    }

    /** Waits, on children watches, until the lock has another participant besides the holder. */
    private static boolean awaitAnotherParticipant(long timeoutMs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            CountDownLatch changed = new CountDownLatch(1);
            List<String> children = client.getChildren().usingWatcher(
                    (org.apache.zookeeper.Watcher) event -> changed.countDown()).forPath(lockPath);
            if (children.size() >= 2) {
                return true;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0 || !changed.await(left, TimeUnit.NANOSECONDS)) {
                return false;
            }
        }
    }
}
