// Benchmark driver on Apache Curator 5.4 (Debian's jars), for the side-by-side harness.
// Usage: java -cp <curator and zookeeper jars>:. CuratorDriver <connect-string>
// Prints "ready", then answers each stdin line "run <scenario> <ops> <path>" with
// "ok <elapsed-ns> <latency-ns,...>" (or "err <message>"); "quit" ends it.

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.zookeeper.KeeperException;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorDriver {
    private static final byte[] PAYLOAD = "x".getBytes();
    private static final int IN_FLIGHT = 1000;
    private static final int CONTENDERS = 8;
    private static String connectString;
    private static final List<CuratorFramework> contenders = new ArrayList<>();
    /** The session timeout of crash_join, the same in every driver. */
    private static final int CRASH_SESSION_MS = 2000;
    /** Leader latches of crash_join, kept open until the process ends. */
    private static final List<LeaderLatch> kept = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        connectString = args[0];
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .retryPolicy(new RetryNTimes(3, 100))
                .sessionTimeoutMs(30000)
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("err not connected");
            return;
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("quit")) {
                break;
            }
            try {
                long[] latencies = new long[Integer.parseInt(words[2])];
                long start = System.nanoTime();
                run(client, words[1], words[3], latencies);
                long elapsed = System.nanoTime() - start;
                StringBuilder out = new StringBuilder("ok ").append(elapsed).append(' ');
                for (int i = 0; i < latencies.length; i++) {
                    if (i > 0) {
                        out.append(',');
                    }
                    out.append(latencies[i]);
                }
                System.out.println(out);
            } catch (Exception e) {
                System.out.println("err " + e);
            }
            System.out.flush();
        }
        client.close();
    }

    /** A started CuratorCache of the tree at path, once its initial load is done. */
    private static CuratorCache loadedCache(CuratorFramework client, String path) throws InterruptedException {
        return loadedCache(client, path, 300);
    }

    /** The same, waiting up to timeoutSeconds for the load (0: no limit but the harness's). */
    private static CuratorCache loadedCache(CuratorFramework client, String path, long timeoutSeconds)
            throws InterruptedException {
        CuratorCache cache = CuratorCache.build(client, path);
        CountDownLatch ready = new CountDownLatch(1);
        cache.listenable().addListener(
                CuratorCacheListener.builder().forInitialized(ready::countDown).build());
        cache.start();
        if (timeoutSeconds == 0) {
            ready.await();
        } else if (!ready.await(timeoutSeconds, TimeUnit.SECONDS)) {
            throw new IllegalStateException("initial load timed out");
        }
        return cache;
    }

    // The paths a client's ZooKeeper handle holds data watches on (ZooKeeper keeps the list
    // protected, for tests; the driver reads it to know a follower is in line).
    @SuppressWarnings("unchecked")
    private static List<String> dataWatches(CuratorFramework client) throws Exception {
        java.lang.reflect.Method method =
                org.apache.zookeeper.ZooKeeper.class.getDeclaredMethod("getDataWatches");
        method.setAccessible(true);
        return (List<String>) method.invoke(client.getZookeeperClient().getZooKeeper());
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        Runtime runtime = Runtime.getRuntime();
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return runtime.totalMemory() - runtime.freeMemory();
    }

    private static void run(CuratorFramework client, String scenario, String path, long[] latencies)
            throws Exception {
        if (scenario.startsWith("scale_")) {
            Scale.run(client, scenario, path, latencies);
            return;
        }
        switch (scenario) {
            case "cache_initial_load": {
                // A CuratorCache loads the tree at path; every latency is the whole load.
                long t = System.nanoTime();
                CuratorCache cache = loadedCache(client, path);
                long took = System.nanoTime() - t;
                long loaded = cache.size();
                cache.close();
                if (loaded < latencies.length) {
                    throw new IllegalStateException("loaded only " + loaded + " nodes");
                }
                Arrays.fill(latencies, took);
                break;
            }
            case "cache_memory": {
                // Heap held by a loaded CuratorCache, per node (after full collections), as
                // the first latency slot; run in a fresh JVM.
                long before = usedHeapAfterGc();
                CuratorCache cache = loadedCache(client, path);
                long after = usedHeapAfterGc();
                long loaded = cache.size();
                cache.close();
                Arrays.fill(latencies, (after - before) / Math.max(loaded, 1));
                break;
            }
            case "cache_update_latency": {
                // From a setData of path/n to the cache's listener seeing the new value.
                String node = path + "/n";
                try {
                    client.create().creatingParentsIfNeeded().forPath(node, "0".getBytes());
                } catch (KeeperException.NodeExistsException e) {
                    // left by an earlier round
                }
                CuratorCache cache = CuratorCache.build(client, path);
                CountDownLatch ready = new CountDownLatch(1);
                BlockingQueue<String> changes = new LinkedBlockingQueue<>();
                cache.listenable().addListener(CuratorCacheListener.builder()
                        .forInitialized(ready::countDown)
                        .forChanges((old, now) -> changes.add(new String(now.getData())))
                        .build());
                cache.start();
                if (!ready.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("initial load timed out");
                }
                for (int i = 0; i < latencies.length; i++) {
                    String value = Integer.toString(i);
                    long t = System.nanoTime();
                    client.setData().forPath(node, value.getBytes());
                    while (true) {
                        String seen = changes.poll(30, TimeUnit.SECONDS);
                        if (seen == null) {
                            throw new IllegalStateException("no change seen");
                        }
                        if (seen.equals(value)) {
                            break;
                        }
                    }
                    latencies[i] = System.nanoTime() - t;
                }
                cache.close();
                break;
            }
            case "get_data":
                for (int i = 0; i < latencies.length; i++) {
                    long t = System.nanoTime();
                    client.getData().forPath(path);
                    latencies[i] = System.nanoTime() - t;
                }
                break;
            case "create_delete":
                for (int i = 0; i < latencies.length; i++) {
                    long t = System.nanoTime();
                    String node = path + "/n" + i;
                    client.create().forPath(node, PAYLOAD);
                    client.delete().forPath(node);
                    latencies[i] = System.nanoTime() - t;
                }
                break;
            case "pipelined_get_data":
                for (int batch = 0; batch < latencies.length; batch += IN_FLIGHT) {
                    int n = Math.min(IN_FLIGHT, latencies.length - batch);
                    CountDownLatch done = new CountDownLatch(n);
                    long[] issued = new long[n];
                    for (int i = 0; i < n; i++) {
                        final int slot = batch + i;
                        final int local = i;
                        issued[i] = System.nanoTime();
                        client.getData().inBackground((c, event) -> {
                            latencies[slot] = System.nanoTime() - issued[local];
                            done.countDown();
                        }).forPath(path);
                    }
                    if (!done.await(60, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("pipelined batch timed out");
                    }
                }
                break;
            case "mutex_uncontended": {
                InterProcessMutex mutex = new InterProcessMutex(client, path);
                for (int i = 0; i < latencies.length; i++) {
                    long t = System.nanoTime();
                    mutex.acquire();
                    mutex.release();
                    latencies[i] = System.nanoTime() - t;
                }
                break;
            }
            case "mutex_contended": {
                // CONTENDERS sessions loop on one lock until the hand-overs add up to the count.
                while (contenders.size() < CONTENDERS) {
                    CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connectString)
                            .retryPolicy(new RetryNTimes(3, 100)).sessionTimeoutMs(30000).build();
                    c.start();
                    c.blockUntilConnected(30, TimeUnit.SECONDS);
                    contenders.add(c);
                }
                contend(contenders, path, latencies, latencies.length);
                break;
            }
            case "leader_handover": {
                // Two participants on separate sessions hand leadership back and forth; before
                // each hand-over the follower is in line (its watch on the leader's node set),
                // as every driver waits.
                CuratorFramework[] clients = new CuratorFramework[2];
                for (int i = 0; i < 2; i++) {
                    clients[i] = CuratorFrameworkFactory.builder().connectString(connectString)
                            .retryPolicy(new RetryNTimes(3, 100)).sessionTimeoutMs(30000).build();
                    clients[i].start();
                    clients[i].blockUntilConnected(30, TimeUnit.SECONDS);
                }
                int leaderIndex = 0;
                LeaderLatch leader = new LeaderLatch(clients[0], path, "p0");
                leader.start();
                leader.await();
                LeaderLatch follower = new LeaderLatch(clients[1], path, "p1");
                follower.start();
                for (int i = 0; i < latencies.length; i++) {
                    // In line: the follower's client watches the leader's node.
                    long inLineBy = System.nanoTime() + 30_000_000_000L;
                    while (!dataWatches(clients[1 - leaderIndex]).contains(leader.getOurPath())) {
                        if (System.nanoTime() > inLineBy) {
                            throw new IllegalStateException("the follower did not get in line");
                        }
                        Thread.yield();
                    }
                    long t = System.nanoTime();
                    leader.close();
                    follower.await();
                    latencies[i] = System.nanoTime() - t;
                    leaderIndex = 1 - leaderIndex;
                    LeaderLatch rejoined = new LeaderLatch(clients[1 - leaderIndex], path, "p" + (1 - leaderIndex));
                    rejoined.start();
                    leader = follower;
                    follower = rejoined;
                }
                leader.close();
                follower.close();
                for (CuratorFramework c : clients) {
                    c.close();
                }
                break;
            }
            case "counter_8way":
            case "counter_8way_plain": {
                // CONTENDERS sessions increment one DistributedAtomicLong until the successful
                // increments add up to the count (Curator has only plain versioned writes).
                while (contenders.size() < CONTENDERS) {
                    CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connectString)
                            .retryPolicy(new RetryNTimes(3, 100)).sessionTimeoutMs(30000).build();
                    c.start();
                    c.blockUntilConnected(30, TimeUnit.SECONDS);
                    contenders.add(c);
                }
                race(contenders, latencies, latencies.length,
                        c -> new DistributedAtomicLong(c, path, new RetryNTimes(100000, 0)),
                        counter -> {
                            if (!counter.increment().succeeded()) {
                                throw new IllegalStateException("an increment gave up");
                            }
                        },
                        null);
                break;
            }
            case "queue_1x1":
            case "queue_4x4": {
                // n producer and n consumer sessions on one SimpleDistributedQueue; one op = an
                // item taken, its latency the take's.
                int n = scenario.equals("queue_1x1") ? 1 : 4;
                while (contenders.size() < 8) {
                    CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connectString)
                            .retryPolicy(new RetryNTimes(3, 100)).sessionTimeoutMs(30000).build();
                    c.start();
                    c.blockUntilConnected(30, TimeUnit.SECONDS);
                    contenders.add(c);
                }
                int total = latencies.length;
                AtomicInteger taken = new AtomicInteger();
                List<Thread> threads = new ArrayList<>();
                List<Exception> failures = new ArrayList<>();
                for (int p = 0; p < n; p++) {
                    SimpleDistributedQueue queue = new SimpleDistributedQueue(contenders.get(p), path);
                    int count = total / n + (p < total % n ? 1 : 0);
                    threads.add(new Thread(() -> {
                        try {
                            for (int i = 0; i < count; i++) {
                                queue.offer(new byte[] {'x'});
                            }
                        } catch (Exception e) {
                            synchronized (failures) {
                                failures.add(e);
                            }
                        }
                    }));
                }
                for (int k = 0; k < n; k++) {
                    SimpleDistributedQueue queue = new SimpleDistributedQueue(contenders.get(4 + k), path);
                    threads.add(new Thread(() -> {
                        try {
                            while (taken.get() < total) {
                                long t = System.nanoTime();
                                if (queue.poll(50, TimeUnit.MILLISECONDS) != null) {
                                    int slot = taken.getAndIncrement();
                                    if (slot < total) {
                                        latencies[slot] = System.nanoTime() - t;
                                    }
                                }
                            }
                        } catch (Exception e) {
                            synchronized (failures) {
                                failures.add(e);
                            }
                        }
                    }));
                }
                for (Thread thread : threads) {
                    thread.start();
                }
                for (Thread thread : threads) {
                    thread.join();
                }
                if (!failures.isEmpty()) {
                    throw failures.get(0);
                }
                break;
            }
            case "crash_join": {
                // A role of the crash failover: join the election at path on a new session
                // (CRASH_SESSION_MS, as every driver) and return once leading; the session stays
                // open until the process is killed.
                CuratorFramework session = CuratorFrameworkFactory.builder().connectString(connectString)
                        .retryPolicy(new RetryNTimes(3, 100)).sessionTimeoutMs(CRASH_SESSION_MS).build();
                session.start();
                session.blockUntilConnected(30, TimeUnit.SECONDS);
                LeaderLatch latch = new LeaderLatch(session, path, "crash");
                latch.start();
                latch.await();
                kept.add(latch);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    /** The scale scenarios (bench-scale): scale_<family>_<n>; see bench-driver.rs for each. */
    /** What each session of a race makes once (a mutex, a counter). */
    interface Prepare<T> {
        T make(CuratorFramework session) throws Exception;
    }

    /** A step of a race on what a session made. */
    interface Step<T> {
        void run(T item) throws Exception;
    }

    /**
     * Every session, on a thread of its own, loops on timed (then after, if any) on what
     * prepare made for it, until count timed calls were made: latencies[0..count) get each
     * call's time.
     */
    static <T> void race(List<CuratorFramework> sessions, long[] latencies, int count,
            Prepare<T> prepare, Step<T> timed, Step<T> after) throws Exception {
        AtomicInteger next = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        List<Exception> failures = new ArrayList<>();
        for (CuratorFramework c : sessions) {
            T item = prepare.make(c);
            Thread thread = new Thread(() -> {
                try {
                    while (true) {
                        long t = System.nanoTime();
                        timed.run(item);
                        int slot = next.getAndIncrement();
                        if (slot < count) {
                            latencies[slot] = System.nanoTime() - t;
                        }
                        if (after != null) {
                            after.run(item);
                        }
                        if (slot >= count - 1) {
                            break;
                        }
                    }
                } catch (Exception e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!failures.isEmpty()) {
            throw failures.get(0);
        }
    }

    /**
     * Every session loops acquire then release on one mutex at path until count acquisitions
     * were made: latencies[0..count) get each acquisition's wait.
     */
    static void contend(List<CuratorFramework> sessions, String path, long[] latencies, int count)
            throws Exception {
        race(sessions, latencies, count, c -> new InterProcessMutex(c, path),
                InterProcessMutex::acquire, InterProcessMutex::release);
    }

    static final class Scale {
        static void run(CuratorFramework client, String scenario, String path, long[] latencies)
                throws Exception {
            int cut = scenario.lastIndexOf('_');
            String family = scenario.substring(0, cut);
            int n = Integer.parseInt(scenario.substring(cut + 1));
            switch (family) {
                case "scale_election":
                    election(path, latencies, n);
                    break;
                case "scale_mutex":
                    mutex(path, latencies, n);
                    break;
                case "scale_locks":
                    locks(client, path, latencies);
                    break;
                case "scale_cache":
                    cache(client, path, latencies, n);
                    break;
                case "scale_queue":
                    queue(client, path, latencies);
                    break;
                default:
                    throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        }

        static CuratorFramework session() throws InterruptedException {
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connectString)
                    .retryPolicy(new RetryNTimes(3, 100)).sessionTimeoutMs(30000).build();
            c.start();
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("a session did not connect");
            }
            return c;
        }

        /** {watches set now, watches triggered so far} from the server's mntr. */
        static long[] watchCounters() throws Exception {
            String first = connectString.split(",")[0];
            int colon = first.lastIndexOf(':');
            String text;
            try (Socket socket = new Socket(first.substring(0, colon),
                    Integer.parseInt(first.substring(colon + 1)))) {
                OutputStream out = socket.getOutputStream();
                out.write("mntr".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = socket.getInputStream();
                text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            long set = 0;
            long fired = 0;
            for (String line : text.split("\n")) {
                String[] kv = line.trim().split("\t");
                if (kv.length != 2) {
                    continue;
                }
                if (kv[0].equals("zk_watch_count")) {
                    set = Long.parseLong(kv[1].trim());
                } else if (kv[0].matches("zk_sum_node_(created|deleted|changed|children)_watch_count")) {
                    fired += Long.parseLong(kv[1].trim());
                }
            }
            return new long[] {set, fired};
        }

        static void election(String path, long[] latencies, int n) throws Exception {
            int k = latencies.length - 2;
            if (k < 1 || k >= n) {
                throw new IllegalArgumentException(k + " hand-overs need more than " + n + " participants");
            }
            long watchesBefore = watchCounters()[0];
            List<CuratorFramework> sessions = new ArrayList<>();
            List<LeaderLatch> latches = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    CuratorFramework c = session();
                    sessions.add(c);
                    LeaderLatch latch = new LeaderLatch(c, path, "p" + i);
                    latch.start();
                    latches.add(latch);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (latches.get(n - 1).getParticipants().size() < n) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("not every participant joined");
                    }
                    Thread.sleep(5);
                }
                long registered = 0;
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (System.nanoTime() < deadline) {
                    registered = watchCounters()[0] - watchesBefore;
                    if (registered >= n - 1) {
                        break;
                    }
                    Thread.sleep(10);
                }
                long firedBefore = watchCounters()[1];
                for (int i = 0; i < k; i++) {
                    // Any open latch lists for everyone (Curator's start makes the node in the
                    // background, so the line's order is not the index order). A closed latch's
                    // node can still be listed (Curator deletes it in the background): only open
                    // latches are in line.
                    LeaderLatch lister = null;
                    for (LeaderLatch open : latches) {
                        if (open != null) {
                            lister = open;
                            break;
                        }
                    }
                    List<Participant> order = new ArrayList<>();
                    for (Participant p : lister.getParticipants()) {
                        if (latches.get(Integer.parseInt(p.getId().substring(1))) != null) {
                            order.add(p);
                        }
                    }
                    int leader = Integer.parseInt(order.get(0).getId().substring(1));
                    int next = Integer.parseInt(order.get(1).getId().substring(1));
                    long t = System.nanoTime();
                    latches.get(leader).close();
                    latches.get(next).await();
                    latencies[i] = System.nanoTime() - t;
                    latches.set(leader, null);
                }
                latencies[k] = watchCounters()[1] - firedBefore;
                latencies[k + 1] = registered;
            } finally {
                for (LeaderLatch latch : latches) {
                    if (latch != null) {
                        try {
                            latch.close();
                        } catch (Exception e) {
                            // closing anyway
                        }
                    }
                }
                for (CuratorFramework c : sessions) {
                    c.close();
                }
            }
        }

        static void mutex(String path, long[] latencies, int n) throws Exception {
            List<CuratorFramework> sessions = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    sessions.add(session());
                }
                // Slots 0..total: each acquisition's wait; slot total: the contended window.
                int total = latencies.length - 1;
                long window = System.nanoTime();
                contend(sessions, path, latencies, total);
                latencies[total] = System.nanoTime() - window;
            } finally {
                for (CuratorFramework c : sessions) {
                    c.close();
                }
            }
        }

        static void locks(CuratorFramework client, String path, long[] latencies) throws Exception {
            int n = latencies.length - 1;
            long before = usedHeapAfterGc();
            List<InterProcessMutex> held = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                InterProcessMutex mutex = new InterProcessMutex(client, path + "/l" + i);
                long t = System.nanoTime();
                mutex.acquire();
                latencies[i] = System.nanoTime() - t;
                held.add(mutex);
            }
            long after = usedHeapAfterGc();
            latencies[n] = (after - before) / Math.max(n, 1);
            for (InterProcessMutex mutex : held) {
                mutex.release();
            }
        }

        static void cache(CuratorFramework client, String path, long[] latencies, int n) throws Exception {
            long before = usedHeapAfterGc();
            long t = System.nanoTime();
            CuratorCache cache = loadedCache(client, path, 0);
            latencies[0] = System.nanoTime() - t;
            long after = usedHeapAfterGc();
            long loaded = cache.size();
            latencies[1] = (after - before) / Math.max(loaded, 1);
            cache.close();
            if (loaded < n) {
                throw new IllegalStateException("loaded only " + loaded + " of " + n + " nodes");
            }
        }

        static void queue(CuratorFramework client, String path, long[] latencies) throws Exception {
            SimpleDistributedQueue queue = new SimpleDistributedQueue(client, path);
            int k = latencies.length / 2;
            for (int i = 0; i < k; i++) {
                long t = System.nanoTime();
                queue.offer(PAYLOAD);
                latencies[i] = System.nanoTime() - t;
            }
            for (int i = 0; i < k; i++) {
                long t = System.nanoTime();
                if (queue.poll() == null) {
                    throw new IllegalStateException("the queue was empty");
                }
                latencies[k + i] = System.nanoTime() - t;
            }
        }
    }
}
