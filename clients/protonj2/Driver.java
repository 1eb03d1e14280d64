// Client driver for Qpid protonj2 (imperative client API): the JSON-lines command protocol of clients/PROTOCOL.md.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.qpid.protonj2.client.*;

public class Driver {
    static Client client;
    static Connection conn;
    static Receiver receiver;
    static Sender sender;
    static int window;

    static Map<String, String> parse(String line) {
        Map<String, String> m = new LinkedHashMap<>();
        Matcher x = Pattern.compile("\"(\\w+)\"\\s*:\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|[-\\w.]+)").matcher(line);
        while (x.find()) m.put(x.group(1), x.group(3) != null ? x.group(3) : x.group(2));
        return m;
    }

    static String q(String s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    static int num(Map<String, String> a, String k, int dflt) {
        return a.containsKey(k) ? Integer.parseInt(a.get(k)) : dflt;
    }

    static String run(String op, Map<String, String> a) throws Exception {
        switch (op) {
            case "connect": {
                URI u = new URI(a.get("url"));
                ConnectionOptions o = new ConnectionOptions();
                o.saslOptions().saslEnabled(true).addAllowedMechanism("ANONYMOUS");
                o.idleTimeout(0);
                client = Client.create();
                conn = client.connect(u.getHost(), u.getPort(), o);
                conn.openFuture().get(num(a, "timeout_ms", 5000), TimeUnit.MILLISECONDS);
                return "";
            }
            case "receiver": {
                window = num(a, "credit", 0);
                ReceiverOptions o = new ReceiverOptions().creditWindow(window);
                receiver = conn.openReceiver(a.get("address"), o);
                receiver.openFuture().get(5, TimeUnit.SECONDS);
                return ",\"api\":" + q("openReceiver(creditWindow(" + window + "))" + (window == 0 ? ", addCredit(1), receive(timeout), drain()" : ", receive(timeout)"));
            }
            case "receive": {
                StringBuilder got = new StringBuilder();
                boolean timeout = false;
                for (int i = 0; i < num(a, "count", 1); i++) {
                    if (window == 0 && receiver.queuedDeliveries() == 0) receiver.addCredit(1);   // a get of one
                    Delivery d = receiver.receive(num(a, "timeout_ms", 1000), TimeUnit.MILLISECONDS);
                    if (d == null && window == 0) {       // take the unused credit back, then look once more
                        receiver.drain().get(num(a, "timeout_ms", 1000), TimeUnit.MILLISECONDS);
                        d = receiver.tryReceive();
                    }
                    if (d == null) { timeout = true; break; }
                    got.append(got.length() > 0 ? "," : "").append(q(String.valueOf(d.message().body())));
                    d.accept();
                }
                return ",\"messages\":[" + got + "],\"timeout\":" + timeout;
            }
            case "drain": {
                receiver.drain().get(num(a, "timeout_ms", 1000), TimeUnit.MILLISECONDS);
                return "";
            }
            case "stop": {
                receiver.close();
                return ",\"api\":" + q("receiver.close()");
            }
            case "sender": {
                sender = conn.openSender(a.get("address"));
                sender.openFuture().get(5, TimeUnit.SECONDS);
                return "";
            }
            case "send": {
                int sent = 0;
                try {
                    for (int i = 0; i < num(a, "count", 1); i++) {
                        sender.send(Message.create("m" + i));
                        sent++;
                    }
                } catch (Exception e) {
                    return ",\"sent\":" + sent + ",\"ok\":false,\"error\":" + q(e.toString());
                }
                return ",\"sent\":" + sent;
            }
            case "close": {
                if (conn != null) conn.close();
                conn = null;
                return "";
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        String version = Client.class.getPackage().getImplementationVersion();
        System.out.println("{\"id\":0,\"ok\":true,\"ready\":true,\"library\":\"protonj2\",\"version\":" + q(version) + "}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, String> a = parse(line);
            String op = a.get("op");
            if ("exit".equals(op)) break;
            long t0 = System.nanoTime();
            String body;
            try {
                String extra = run(op, a);
                body = extra.contains("\"ok\":false") ? extra : ",\"ok\":true" + extra;
            } catch (Throwable e) {
                Throwable c = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                body = ",\"ok\":false,\"error\":" + q(c.toString());
            }
            System.out.println("{\"id\":" + a.get("id") + body + ",\"ms\":" + (System.nanoTime() - t0) / 1000000 + "}");
            System.out.flush();
        }
        System.exit(0);
    }
}
