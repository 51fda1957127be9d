// A Java process that is one member of an Apache Curator DistributedDoubleBarrier, driven line
// by line by the interoperability tests. Arguments: <connect> <path> <member-count>. Exits when
// its standard input closes.
//   enter <ms>   -> "entered" | "timeout"
//   leave <ms>   -> "left" | "timeout"

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.RetryNTimes;

public final class DoubleBarrierPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(client, args[1], Integer.parseInt(args[2]));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            try {
                switch (words[0]) {
                    case "enter":
                        answer = barrier.enter(Long.parseLong(words[1]), TimeUnit.MILLISECONDS) ? "entered" : "timeout";
                        break;
                    case "leave":
                        answer = barrier.leave(Long.parseLong(words[1]), TimeUnit.MILLISECONDS) ? "left" : "timeout";
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
