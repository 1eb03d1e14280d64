// Client driver for vertx-amqp-client (the Vert.x AMQP client on vertx-proton, as Quarkus/SmallRye reactive
// messaging uses it): the JSON-lines command protocol of clients/PROTOCOL.md. It manages link credit itself
// (AmqpReceiverImpl at the pinned release: "Disable auto-accept and automated prefetch, we manage disposition and
// credit manually", `setPrefetch(0)`; initial credit `maxBufferedMessages` (default 1000) flowed when the handler is
// set, then `receiver.flow(1)` after each message handed to the application), so it is judged apart from
// vertx-proton. Citations: the Javadoc of io.vertx.amqp.* at the pinned release and the project's documentation
// (src/main/asciidoc/index.adoc: "Creating a client", "Creating a receiver", "Creating a sender").
import io.vertx.amqp.AmqpClient;
import io.vertx.amqp.AmqpClientOptions;
import io.vertx.amqp.AmqpConnection;
import io.vertx.amqp.AmqpMessage;
import io.vertx.amqp.AmqpReceiver;
import io.vertx.amqp.AmqpReceiverOptions;
import io.vertx.amqp.AmqpSender;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Driver {
    static Vertx vertx;
    static AmqpClient client;
    static AmqpConnection conn;
    static AmqpReceiver receiver;
    static AmqpSender sender;
    static final LinkedBlockingDeque<String> inbox = new LinkedBlockingDeque<>();
    static final List<String> events = new ArrayList<>();

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

    static synchronized void event(String what) {
        events.add(what);
    }

    static <T> T await(Future<T> f, int ms) throws Exception {
        return f.toCompletionStage().toCompletableFuture().get(ms, TimeUnit.MILLISECONDS);
    }

    static String run(String op, Map<String, String> a) throws Exception {
        switch (op) {
            case "connect": {
                URI u = new URI(a.get("url"));
                conn = null;            // a fresh connection per case: the last one's late events do not count
                inbox.clear();
                synchronized (Driver.class) { events.clear(); }
                // AmqpClient.create(vertx, new AmqpClientOptions().setHost(..).setPort(..)), client.connect()
                // (index.adoc "Creating a client"); AmqpClientOptions extends ProtonClientOptions, so SASL ANONYMOUS
                // as the scripted broker offers it is addEnabledSaslMechanism("ANONYMOUS").
                AmqpClientOptions o = new AmqpClientOptions().setHost(u.getHost()).setPort(u.getPort());
                o.addEnabledSaslMechanism("ANONYMOUS");
                o.setHeartbeat(0);
                client = AmqpClient.create(vertx, o);
                AmqpConnection c = await(client.connect(), num(a, "timeout_ms", 5000));
                conn = c;
                // AmqpConnection Javadoc: exceptionHandler / closeFuture: what the application is told.
                c.exceptionHandler(e -> { if (c == conn) event("connection exception: " + e); });
                c.closeFuture().onComplete(r -> { if (c == conn) event("connection closed" + (r.failed() ? ": " + r.cause() : "")); });
                return "";
            }
            case "receiver": {
                int credit = num(a, "credit", 0);
                if (credit == 0) {
                    return ",\"ok\":false,\"unsupported\":" + q("vertx-amqp-client has no receiver without a credit window: "
                        + "AmqpReceiverImpl flows maxBufferedMessages (default 1000) when the handler is set and 1 more per "
                        + "message handed over; pause()/fetch(n) act on its own buffer, not on link credit; no drain");
                }
                // connection.createReceiver(address, new AmqpReceiverOptions().setMaxBufferedMessages(n)) then
                // receiver.handler(...) (index.adoc "Creating a receiver"; AmqpReceiverOptions.setMaxBufferedMessages:
                // the initial credit, AmqpReceiverImpl `initialCredit = maxBufferedMessages`); auto-acknowledgement
                // (the default) settles what the handler took.
                receiver = await(conn.createReceiver(a.get("address"), new AmqpReceiverOptions().setMaxBufferedMessages(credit)), 5000);
                receiver.exceptionHandler(e -> event("receiver exception: " + e));
                receiver.handler(msg -> inbox.add(msg.bodyAsString()));
                return ",\"api\":" + q("createReceiver(address, setMaxBufferedMessages(" + credit + ")), handler(msg -> ...)");
            }
            case "receive": {
                StringBuilder got = new StringBuilder();
                boolean timeout = false;
                int wait = num(a, "timeout_ms", 1000);
                for (int i = 0; i < num(a, "count", 1); i++) {
                    String m = inbox.poll(wait, TimeUnit.MILLISECONDS);
                    if (m == null) { timeout = true; break; }
                    got.append(got.length() > 0 ? "," : "").append(q(m));
                }
                return ",\"messages\":[" + got + "],\"timeout\":" + timeout;
            }
            case "stop": {
                // AmqpReceiver.close() (Javadoc: "Closes the receiver")
                await(receiver.close(), 5000);
                return ",\"api\":" + q("receiver.close()");
            }
            case "sender": {
                // connection.createSender(address) (index.adoc "Creating a sender")
                sender = await(conn.createSender(a.get("address")), 5000);
                sender.exceptionHandler(e -> event("sender exception: " + e));
                return ",\"api\":" + q("createSender(address); sendWithAck(message) when !writeQueueFull(), else drainHandler");
            }
            case "send": {
                int count = num(a, "count", 1), wait = num(a, "timeout_ms", 5000);
                int sent = 0;
                for (int i = 0; i < count; i++) {
                    // AmqpSender is a WriteStream: writeQueueFull() while there is no credit, drainHandler when there
                    // is (index.adoc "Creating a sender": "check writeQueueFull ... drainHandler").
                    if (sender.writeQueueFull()) {
                        CompletableFuture<Void> credit = new CompletableFuture<>();
                        sender.drainHandler(v -> credit.complete(null));
                        if (sender.writeQueueFull()) {
                            try {
                                credit.get(wait, TimeUnit.MILLISECONDS);
                            } catch (java.util.concurrent.TimeoutException e) {
                                return ",\"sent\":" + sent + ",\"ok\":false,\"error\":" + q("no credit to send m" + i + " within " + wait + " ms");
                            }
                        }
                    }
                    // sender.sendWithAck(AmqpMessage.create().withBody(..).build()) (index.adoc "Creating a sender")
                    try {
                        await(sender.sendWithAck(AmqpMessage.create().withBody("m" + i).build()), wait);
                    } catch (java.util.concurrent.TimeoutException e) {
                        return ",\"sent\":" + sent + ",\"ok\":false,\"error\":" + q("m" + i + " not acknowledged within " + wait + " ms");
                    }
                    sent++;
                }
                return ",\"sent\":" + sent;
            }
            case "close": {
                if (conn != null) {
                    try {
                        await(conn.close(), 2000);
                    } catch (Exception e) {
                        // the broker did not answer the close
                    }
                    conn = null;
                }
                return "";
            }
            case "poll":
                return "";        // what happened since the last answer (`events`); no drain is handed to the application
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static String version() {
        try (InputStream in = Driver.class.getResourceAsStream("/META-INF/maven/io.vertx/vertx-amqp-client/pom.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (Exception e) {
            return "unknown";
        }
    }

    public static void main(String[] args) throws Exception {
        vertx = Vertx.vertx();
        System.out.println("{\"id\":0,\"ok\":true,\"ready\":true,\"library\":\"vertx-amqp-client\",\"version\":" + q(version()) + "}");
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
            synchronized (Driver.class) {
                if (!events.isEmpty()) {
                    StringBuilder ev = new StringBuilder();
                    for (String e : events) ev.append(ev.length() > 0 ? "," : "").append(q(e));
                    body += ",\"events\":[" + ev + "]";
                    events.clear();
                }
            }
            System.out.println("{\"id\":" + a.get("id") + body + ",\"ms\":" + (System.nanoTime() - t0) / 1000000 + "}");
            System.out.flush();
        }
        System.exit(0);
    }
}
