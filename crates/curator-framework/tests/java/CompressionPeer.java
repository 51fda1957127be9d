// A Java process using Apache Curator's per-operation compression (5.4: compressed() on create
// and setData, decompressed() on getData, with the default GzipCompressionProvider), driven line
// by line by the interoperability test. Argument: <connect>. Data travels as hex ("-" for empty).
// Exits when its standard input closes.
//   create <path> <hex>   -> "ok"          (create().compressed().creatingParentsIfNeeded())
//   set <path> <hex>      -> "ok"          (setData().compressed())
//   read <path>           -> "data <hex>"  (getData().decompressed())
//   raw <path>            -> "data <hex>"  (getData(), the stored bytes)
// A failure answers "error <exception class>: <message>".

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;

public final class CompressionPeer {
    private static byte[] decode(String hex) {
        return hex.equals("-") ? new byte[0] : HexFormat.of().parseHex(hex);
    }

    private static String encode(byte[] data) {
        return data.length == 0 ? "-" : HexFormat.of().formatHex(data);
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            try {
                switch (words[0]) {
                    case "create":
                        client.create().compressed().creatingParentsIfNeeded().forPath(words[1], decode(words[2]));
                        answer = "ok";
                        break;
                    case "set":
                        client.setData().compressed().forPath(words[1], decode(words[2]));
                        answer = "ok";
                        break;
                    case "read":
                        answer = "data " + encode(client.getData().decompressed().forPath(words[1]));
                        break;
                    case "raw":
                        answer = "data " + encode(client.getData().forPath(words[1]));
                        break;
                    default:
                        answer = "error unknown command " + words[0];
                }
            } catch (Exception e) {
                answer = "error " + e.getClass().getName() + ": " + e.getMessage();
            }
            System.out.println(answer);
            System.out.flush();
        }
        client.close();
    }
}
