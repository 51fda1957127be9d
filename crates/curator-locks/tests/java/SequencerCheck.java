// Checks a curator-rs hold's sequencer from Java, by its documented text form alone
// (zkseq1:<session hex>:<token hex>:<path>): valid while a node is at <path> whose czxid is the
// token and whose ephemeralOwner is the session. Arguments: <connect>. Reads one sequencer per
// line on standard input and answers "valid" or "stale" (or "error <reason>"); prints "ready"
// once connected.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public final class SequencerCheck {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            System.out.println(check(client, line.trim()));
            System.out.flush();
        }
        client.close();
    }

    private static String check(CuratorFramework client, String sequencer) {
        String[] fields = sequencer.split(":", 4);
        if (fields.length != 4 || !fields[0].equals("zkseq1")
                || fields[1].length() != 16 || fields[2].length() != 16) {
            return "error not a sequencer";
        }
        try {
            long session = Long.parseUnsignedLong(fields[1], 16);
            long token = Long.parseUnsignedLong(fields[2], 16);
            Stat stat = client.checkExists().forPath(fields[3]);
            boolean valid = stat != null && stat.getCzxid() == token && stat.getEphemeralOwner() == session;
            return valid ? "valid" : "stale";
        } catch (Exception e) {
            return "error " + e;
        }
    }
}
