// A Java process with an Apache Curator CuratorCache, driven line by line by the
// interoperability tests. Arguments: <connect> <root>. Exits when its standard input closes.
//   start                -> "started" once the cache is initialized
//   create <path> <data> -> "ok" (parents created as needed)
//   set <path> <data>    -> "ok"
//   delete <path>        -> "ok" (children deleted as needed)
//   dump                 -> "dump <path>=<data>;<path>=<data>..." (the cache's content, by path)
//   events               -> "events <kind> <path> <data>;..." (the cache's events so far)
//   await-dump <dump>    -> "dump ..." once the cache's content is <dump> (or 30 s have passed)
//   await-event <event>  -> "seen" once the listener has had <event> ("<kind> <path> <data>"),
//                           "timeout <events>" after 30 s

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.RetryNTimes;

public final class CachePeer {
    private static String text(ChildData node) {
        byte[] data = node.getData();
        return data == null ? "" : new String(data, StandardCharsets.UTF_8);
    }

    private static String dump(CuratorCache cache) {
        return "dump " + cache.stream()
                .sorted(Comparator.comparing(ChildData::getPath))
                .map(node -> node.getPath() + "=" + text(node))
                .collect(Collectors.joining(";"));
    }

    // The listener adds to the list and wakes the waiters under the list's monitor: the storage
    // is updated before the listener runs, so a waiter woken by an event sees both.
    private static void record(List<String> events, String event) {
        synchronized (events) {
            events.add(event);
            events.notifyAll();
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        CuratorCache cache = CuratorCache.build(client, args[1]);
        CountDownLatch initialized = new CountDownLatch(1);
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(node -> record(events, "created " + node.getPath() + " " + text(node)))
                .forChanges((old, node) -> record(events, "changed " + node.getPath() + " " + text(node)))
                .forDeletes(old -> record(events, "deleted " + old.getPath() + " " + text(old)))
                .forInitialized(initialized::countDown)
                .build());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            // The command's argument as sent (an event's data may be empty: "created /a ").
            String rest = line.length() > words[0].length() ? line.substring(words[0].length() + 1) : "";
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            String answer;
            try {
                switch (words[0]) {
                    case "start":
                        cache.start();
                        answer = initialized.await(30, TimeUnit.SECONDS) ? "started" : "timeout";
                        break;
                    case "create":
                        client.create().creatingParentsIfNeeded()
                                .forPath(words[1], words[2].getBytes(StandardCharsets.UTF_8));
                        answer = "ok";
                        break;
                    case "set":
                        client.setData().forPath(words[1], words[2].getBytes(StandardCharsets.UTF_8));
                        answer = "ok";
                        break;
                    case "delete":
                        client.delete().deletingChildrenIfNeeded().forPath(words[1]);
                        answer = "ok";
                        break;
                    case "dump":
                        answer = dump(cache);
                        break;
                    case "await-dump":
                        synchronized (events) {
                            answer = dump(cache);
                            while (!answer.equals("dump " + rest) && System.nanoTime() < end) {
                                events.wait(100);
                                answer = dump(cache);
                            }
                        }
                        break;
                    case "await-event":
                        synchronized (events) {
                            while (!events.contains(rest) && System.nanoTime() < end) {
                                events.wait(100);
                            }
                            answer = events.contains(rest) ? "seen" : "timeout " + String.join(";", events);
                        }
                        break;
                    case "events":
                        synchronized (events) {
                            answer = "events " + String.join(";", events);
                        }
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
        cache.close();
        client.close();
    }
}
