// Client driver for Qpid protonj2 (imperative client API): the JSON-lines command protocol of clients/PROTOCOL.md.
//
// Every call into the library carries a comment citing protonj2's own documentation (protonj2-client-docs/
// GettingStarted.md, the client API's javadoc) or example (protonj2-client-examples: Receive.java, Send.java)
// at the pinned release 1.0.0-M23. protonj2 answers a drain on a sender itself when no send is blocked
// (ClientSender.handleCreditStateUpdated: sender.drained()), and Receiver.drain() returns a future the
// drained flow completes: the driver waits on it. This driver reports no `drains`.
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
                // ConnectionOptions javadoc; SaslOptions.addAllowedMechanism: "the client will select the first
                // mechanism from the server offered mechanisms that is supported" among those allowed
                ConnectionOptions o = new ConnectionOptions();
                o.saslOptions().saslEnabled(true).addAllowedMechanism("ANONYMOUS");
                o.idleTimeout(0);
                // GettingStarted.md: Client container = Client.create(); container.connect(remoteAddress,
                // remotePort, new ConnectionOptions())
                client = Client.create();
                conn = client.connect(u.getHost(), u.getPort(), o);
                // Connection javadoc openFuture(): completed when the remote opens the connection
                conn.openFuture().get(num(a, "timeout_ms", 5000), TimeUnit.MILLISECONDS);
                return "";
            }
            case "receiver": {
                window = num(a, "credit", 0);
                // ReceiverOptions.creditWindow javadoc: "To disable credit windowing and allow the client
                // application to control the credit on the Receiver link the credit window value should be set to
                // zero"; autoAccept (default true): "automatically accept the deliveries that have been received
                // by the application"
                ReceiverOptions o = new ReceiverOptions().creditWindow(window);
                // GettingStarted.md: Receiver receiver = connection.openReceiver("address")
                receiver = conn.openReceiver(a.get("address"), o);
                // Link javadoc openFuture(): "completed when the remote opens this Link"
                receiver.openFuture().get(5, TimeUnit.SECONDS);
                return ",\"api\":" + q("openReceiver(creditWindow(" + window + "))" + (window == 0 ? ", addCredit(1), receive(timeout), drain()" : ", receive(timeout)"));
            }
            case "receive": {
                StringBuilder got = new StringBuilder();
                boolean timeout = false;
                for (int i = 0; i < num(a, "count", 1); i++) {
                    // GettingStarted.md: "if you have configured the client not to manage a credit window then your
                    // application will need to provide receiver credit before invoking the receive APIs":
                    // receiver.addCredit(1); Receiver javadoc queuedDeliveries()
                    if (window == 0 && receiver.queuedDeliveries() == 0) receiver.addCredit(1);   // a get of one
                    // Receive.java: receiver.receive(); Receiver javadoc receive(timeout, unit): null when none came
                    Delivery d = receiver.receive(num(a, "timeout_ms", 1000), TimeUnit.MILLISECONDS);
                    if (d == null && window == 0) {       // take the unused credit back, then look once more
                        // Receiver javadoc drain(): "Requests the remote to drain previously granted credit ...
                        // a Future that will be completed when the remote drains this Receiver link"; tryReceive():
                        // "returns a message is one is immediately available or returns null"
                        receiver.drain().get(num(a, "timeout_ms", 1000), TimeUnit.MILLISECONDS);
                        d = receiver.tryReceive();
                    }
                    if (d == null) { timeout = true; break; }
                    // Receive.java: delivery.message(), message.body(); autoAccept accepted it on receive
                    got.append(got.length() > 0 ? "," : "").append(q(String.valueOf(d.message().body())));
                }
                return ",\"messages\":[" + got + "],\"timeout\":" + timeout;
            }
            case "stop": {
                // Link javadoc close(): "Requests a close of the Link at the remote and waits until the Link has
                // been fully closed or until the configured close timeout is exceeded"
                receiver.close();
                return ",\"api\":" + q("receiver.close()");
            }
            case "sender": {
                // GettingStarted.md: Sender sender = connection.openSender("address")
                sender = conn.openSender(a.get("address"));
                // Link javadoc openFuture(): "completed when the remote opens this Link"
                sender.openFuture().get(5, TimeUnit.SECONDS);
                return "";
            }
            case "send": {
                int sent = 0;
                try {
                    for (int i = 0; i < num(a, "count", 1); i++) {
                        // GettingStarted.md: Message.create("message content"); Tracker tracker = sender.send(message)
                        // (Sender javadoc send: "Send the given message immediately if there is credit available or
                        // blocks if the link has not yet been granted credit")
                        sender.send(Message.create("m" + i));
                        sent++;
                    }
                } catch (Exception e) {
                    return ",\"sent\":" + sent + ",\"ok\":false,\"error\":" + q(e.toString());
                }
                return ",\"sent\":" + sent;
            }
            case "poll": {
                return "";
            }
            case "close": {
                // Connection javadoc close(): "Requests a close of the Connection at the remote and waits until
                // the Connection has been fully closed"
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
