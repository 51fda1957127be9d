// A Java process using Apache Curator's ServiceDiscovery (curator-x-discovery 5.4, payload class
// Object, the default JsonInstanceSerializer), driven line by line by the interoperability tests.
// Arguments: <connect> <base-path>. Exits when its standard input closes. Words are separated by
// single spaces; "-" stands for "not set".
//   register <name> <id> <address> <port> <ssl-port> <kind> <payload> <uri-spec> <time>
//                         -> "ok"   (kind: string | map, a map payload is "k=v,k=v")
//   serialize <same arguments as register> -> the JSON Curator writes for that instance
//   query <name>          -> a JSON array: per instance name, id, address, port, sslPort,
//                            payloadClass, payload, registrationTimeUTC, serviceType, uri
//                            (buildUriSpec()), enabled
//   unregister <name> <id> -> "ok"

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceInstanceBuilder;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

public final class DiscoveryPeer {
    private static String value(String word) {
        return word.equals("-") ? null : word;
    }

    private static ServiceInstance<Object> instance(String[] w) throws Exception {
        ServiceInstanceBuilder<Object> builder = ServiceInstance.<Object>builder()
            .name(w[1])
            .id(w[2])
            .address(value(w[3]))
            .registrationTimeUTC(Long.parseLong(w[9]));
        if (value(w[4]) != null) {
            builder.port(Integer.parseInt(w[4]));
        }
        if (value(w[5]) != null) {
            builder.sslPort(Integer.parseInt(w[5]));
        }
        if (value(w[7]) != null) {
            if (w[6].equals("map")) {
                Map<String, String> map = new LinkedHashMap<>();
                for (String pair : w[7].split(",")) {
                    String[] kv = pair.split("=", 2);
                    map.put(kv[0], kv[1]);
                }
                builder.payload(map);
            } else {
                builder.payload(w[7]);
            }
        }
        if (value(w[8]) != null) {
            builder.uriSpec(new UriSpec(w[8]));
        }
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(10, 200));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        ServiceDiscovery<Object> discovery = ServiceDiscoveryBuilder.builder(Object.class)
            .client(client)
            .basePath(args[1])
            .build();
        discovery.start();
        ObjectMapper mapper = new ObjectMapper();
        JsonInstanceSerializer<Object> serializer = new JsonInstanceSerializer<>(Object.class);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            try {
                switch (words[0]) {
                    case "register":
                        discovery.registerService(instance(words));
                        answer = "ok";
                        break;
                    case "serialize":
                        answer = new String(serializer.serialize(instance(words)), StandardCharsets.UTF_8);
                        break;
                    case "query": {
                        List<Map<String, Object>> found = new ArrayList<>();
                        for (ServiceInstance<Object> i : discovery.queryForInstances(words[1])) {
                            Map<String, Object> m = new LinkedHashMap<>();
                            m.put("name", i.getName());
                            m.put("id", i.getId());
                            m.put("address", i.getAddress());
                            m.put("port", i.getPort());
                            m.put("sslPort", i.getSslPort());
                            m.put("payloadClass", i.getPayload() == null ? null : i.getPayload().getClass().getName());
                            m.put("payload", i.getPayload());
                            m.put("registrationTimeUTC", i.getRegistrationTimeUTC());
                            m.put("serviceType", i.getServiceType().name());
                            m.put("uri", i.getUriSpec() == null ? null : i.buildUriSpec());
                            m.put("enabled", i.isEnabled());
                            found.add(m);
                        }
                        answer = mapper.writeValueAsString(found);
                        break;
                    }
                    case "unregister": {
                        ServiceInstance<Object> i = discovery.queryForInstance(words[1], words[2]);
                        if (i != null) {
                            discovery.unregisterService(i);
                        }
                        answer = "ok";
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
        discovery.close();
        client.close();
    }
}
