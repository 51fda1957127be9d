// A Java process using Apache Curator's SharedCount and DistributedAtomicLong, driven line by
// line by the interoperability tests. Arguments: <connect> <count-path> <long-path>. Exits when
// its standard input closes.
//   count              -> "count <n>"            (the SharedCount's current view)
//   count-set <n>      -> "ok"
//   count-wait <n>     -> "count <n>" | "timeout" (waits up to 20 s for the view to show n)
//   long               -> "long <n>"
//   long-add <d> <k>   -> "long <post> <successes>" (k increments of d, one after the other)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.RetryNTimes;

public final class CounterPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        SharedCount count = new SharedCount(client, args[1], 0);
        count.start();
        DistributedAtomicLong number = new DistributedAtomicLong(client, args[2], new RetryNTimes(10000, 1));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            try {
                switch (words[0]) {
                    case "count":
                        answer = "count " + count.getCount();
                        break;
                    case "count-set":
                        count.setCount(Integer.parseInt(words[1]));
                        answer = "ok";
                        break;
                    case "count-wait": {
                        int wanted = Integer.parseInt(words[1]);
                        long end = System.currentTimeMillis() + 20000;
                        while (count.getCount() != wanted && System.currentTimeMillis() < end) {
                            Thread.sleep(5);
                        }
                        answer = count.getCount() == wanted ? "count " + wanted : "timeout";
                        break;
                    }
                    case "long":
                        answer = "long " + number.get().postValue();
                        break;
                    case "long-add": {
                        long delta = Long.parseLong(words[1]);
                        int times = Integer.parseInt(words[2]);
                        int successes = 0;
                        long post = 0;
                        for (int i = 0; i < times; i++) {
                            AtomicValue<Long> result = number.add(delta);
                            if (result.succeeded()) {
                                successes++;
                                post = result.postValue();
                            }
                        }
                        answer = "long " + post + " " + successes;
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
        count.close();
        client.close();
    }
}
