// A Java process that is a member of a group through Apache Curator's GroupMember, driven line
// by line by the interoperability tests. Arguments: <connect> <group-path> <id> <payload>.
// Exits when its standard input closes.
//   members <want>  -> "members <want>" once the current members, written as sorted
//                      "id=payload,...", are <want>; "timeout <what they are>" after 20 s
//   leave           -> "ok" (closes the member: its node is deleted)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.retry.RetryNTimes;

public final class GroupPeer {
    private static String describe(Map<String, byte[]> members) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, byte[]> entry : new TreeMap<>(members).entrySet()) {
            if (out.length() > 0) {
                out.append(',');
            }
            out.append(entry.getKey()).append('=')
                    .append(new String(entry.getValue(), StandardCharsets.UTF_8));
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        GroupMember member = new GroupMember(client, args[1], args[2], args[3].getBytes(StandardCharsets.UTF_8));
        member.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            switch (words[0]) {
                case "members": {
                    long end = System.currentTimeMillis() + 20000;
                    String seen = describe(member.getCurrentMembers());
                    while (!seen.equals(words[1]) && System.currentTimeMillis() < end) {
                        Thread.sleep(5);
                        seen = describe(member.getCurrentMembers());
                    }
                    answer = (seen.equals(words[1]) ? "members " : "timeout ") + seen;
                    break;
                }
                case "leave":
                    member.close();
                    answer = "ok";
                    break;
                default:
                    answer = "unknown " + line;
            }
            System.out.println(answer);
            System.out.flush();
        }
        client.close();
    }
}
