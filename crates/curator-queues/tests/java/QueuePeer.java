// A Java process using Apache Curator's SimpleDistributedQueue and DistributedQueue (String
// items, UTF-8), driven line by line by the interoperability tests. Arguments: <connect>
// <simple-path> <queue-path> <lock-path>. Exits when its standard input closes.
//   offer <text>         -> "ok"                      (SimpleDistributedQueue)
//   poll <ms>            -> "item <text>" | "timeout" (SimpleDistributedQueue)
//   put <text>           -> "ok"                      (DistributedQueue producer)
//   consume              -> "ok"                      (starts a lock-safe consumer)
//   consumed <n> <ms>    -> "items <a>,<b>,..." once n items were consumed, or "timeout"

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

public final class QueuePeer {
    static final QueueSerializer<String> UTF8 = new QueueSerializer<String>() {
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        SimpleDistributedQueue simple = new SimpleDistributedQueue(client, args[1]);
        List<String> consumed = new ArrayList<>();
        QueueConsumer<String> consumer = new QueueConsumer<String>() {
            public void consumeMessage(String item) {
                synchronized (consumed) {
                    consumed.add(item);
                    consumed.notifyAll();
                }
            }

            public void stateChanged(CuratorFramework c, ConnectionState state) {
            }
        };
        DistributedQueue<String> producer = QueueBuilder.builder(client, null, UTF8, args[2]).buildQueue();
        producer.start();
        DistributedQueue<String> queue = null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ", 2);
            String answer;
            try {
                switch (words[0]) {
                    case "offer":
                        simple.offer(words[1].getBytes(StandardCharsets.UTF_8));
                        answer = "ok";
                        break;
                    case "poll": {
                        byte[] item = simple.poll(Long.parseLong(words[1]), TimeUnit.MILLISECONDS);
                        answer = item == null ? "timeout" : "item " + new String(item, StandardCharsets.UTF_8);
                        break;
                    }
                    case "put":
                        producer.put(words[1]);
                        answer = "ok";
                        break;
                    case "consume":
                        queue = QueueBuilder.builder(client, consumer, UTF8, args[2]).lockPath(args[3]).buildQueue();
                        queue.start();
                        answer = "ok";
                        break;
                    case "consumed": {
                        String[] parts = words[1].split(" ");
                        int wanted = Integer.parseInt(parts[0]);
                        long end = System.currentTimeMillis() + Long.parseLong(parts[1]);
                        synchronized (consumed) {
                            while (consumed.size() < wanted && System.currentTimeMillis() < end) {
                                consumed.wait(Math.max(1, end - System.currentTimeMillis()));
                            }
                            answer = consumed.size() < wanted ? "timeout" : "items " + String.join(",", consumed);
                        }
                        break;
                    }
                    default:
                        answer = "error unknown command " + line;
                }
            } catch (Exception e) {
                answer = "error " + e;
            }
            System.out.println(answer);
            System.out.flush();
        }
        if (queue != null) {
            queue.close();
        }
        producer.close();
        client.close();
    }
}
