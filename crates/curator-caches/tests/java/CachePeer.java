// A Java process with an Apache Curator CuratorCache, driven line by line by the
// interoperability tests. Arguments: <connect> <root>. Exits when its standard input closes.
//   start                -> "started" once the cache is initialized
//   create <path> <data> -> "ok" (parents created as needed)
//   set <path> <data>    -> "ok"
//   delete <path>        -> "ok" (children deleted as needed)
//   dump                 -> "dump <path>=<data>;<path>=<data>..." (the cache's content, by path)
//   events               -> "events <kind> <path> <data>;..." (the cache's events so far)

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

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        CuratorCache cache = CuratorCache.build(client, args[1]);
        CountDownLatch initialized = new CountDownLatch(1);
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(node -> events.add("created " + node.getPath() + " " + text(node)))
                .forChanges((old, node) -> events.add("changed " + node.getPath() + " " + text(node)))
                .forDeletes(old -> events.add("deleted " + old.getPath() + " " + text(old)))
                .forInitialized(initialized::countDown)
                .build());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
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
                        answer = "dump " + cache.stream()
                                .sorted(Comparator.comparing(ChildData::getPath))
                                .map(node -> node.getPath() + "=" + text(node))
                                .collect(Collectors.joining(";"));
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
