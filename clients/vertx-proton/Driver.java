// Client driver for vertx-proton (Vert.x's AMQP 1.0 layer over proton-j): the JSON-lines command protocol of
// clients/PROTOCOL.md. Citations: the Javadoc of io.vertx.proton.ProtonClient / ProtonConnection / ProtonReceiver /
// ProtonSender / ProtonHelper at the pinned release (the -sources jar Maven serves beside it), and the project's
// README examples ("Creating a client", "Receiving", "Sending"). Everything that touches a Proton object runs on
// the connection's Vert.x context (ProtonConnection is not thread-safe: "must be used from the context it was
// created on"); the driver's thread hands work over with Context.runOnContext and waits for the answer, bounded.
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.proton.ProtonClient;
import io.vertx.proton.ProtonClientOptions;
import io.vertx.proton.ProtonConnection;
import io.vertx.proton.ProtonHelper;
import io.vertx.proton.ProtonReceiver;
import io.vertx.proton.ProtonSender;
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
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.qpid.proton.amqp.messaging.AmqpValue;
import org.apache.qpid.proton.amqp.messaging.Data;
import org.apache.qpid.proton.message.Message;

public class Driver {
    static Vertx vertx;
    static Context ctx;
    static ProtonConnection conn;
    static volatile boolean ended;   // the current connection was closed by the broker or lost
    static ProtonReceiver receiver;
    static ProtonSender sender;
    static boolean manual;
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

    /** Run `work` on the connection's context and wait (bounded) for what it completes. */
    static <T> T onContext(int ms, Consumer<CompletableFuture<T>> work) throws Exception {
        CompletableFuture<T> f = new CompletableFuture<>();
        ctx.runOnContext(v -> {
            try {
                work.accept(f);
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f.get(ms, TimeUnit.MILLISECONDS);
    }

    static String body(Message msg) {
        Object b = msg.getBody();
        if (b instanceof AmqpValue) return String.valueOf(((AmqpValue) b).getValue());
        if (b instanceof Data) return new String(((Data) b).getValue().getArray());
        return String.valueOf(b);
    }

    static String run(String op, Map<String, String> a) throws Exception {
        switch (op) {
            case "connect": {
                URI u = new URI(a.get("url"));
                conn = null;            // a fresh connection per case: the last one's late events do not count
                ended = false;
                inbox.clear();
                synchronized (Driver.class) { events.clear(); }
                // ProtonClient.create(vertx).connect(options, host, port, handler) then connection.open()
                // (README "Creating a client"; ProtonClient Javadoc); SASL as the scripted broker offers it:
                // ProtonClientOptions.addEnabledSaslMechanism("ANONYMOUS").
                ProtonClientOptions o = new ProtonClientOptions().addEnabledSaslMechanism("ANONYMOUS").setHeartbeat(0);
                onContext(num(a, "timeout_ms", 5000), (CompletableFuture<Void> f) ->
                    ProtonClient.create(vertx).connect(o, u.getHost(), u.getPort(), res -> {
                        if (res.failed()) { f.completeExceptionally(res.cause()); return; }
                        ProtonConnection c = res.result();
                        conn = c;
                        // closeHandler / disconnectHandler (ProtonConnection Javadoc): what the application is told.
                        c.closeHandler(r -> {
                            if (c == conn) event("connection closed by the broker" + (c.getRemoteCondition() != null
                                ? ": " + c.getRemoteCondition().getCondition() + " " + c.getRemoteCondition().getDescription() : ""));
                            if (c == conn) ended = true;
                            c.close();
                        });
                        c.disconnectHandler(x -> { if (c == conn) { event("disconnected"); ended = true; } });
                        // ProtonConnection Javadoc: sessionOpenHandler (a session the peer begins is opened) and
                        // openHandler, then open() (README "Creating a client")
                        c.sessionOpenHandler(s -> s.open());
                        c.openHandler(r -> { if (r.succeeded()) f.complete(null); else f.completeExceptionally(r.cause()); })
                         .open();
                    }));
                return "";
            }
            case "receiver": {
                int credit = num(a, "credit", 0);
                manual = credit == 0;
                String address = a.get("address");
                onContext(5000, (CompletableFuture<Void> f) -> {
                    // connection.createReceiver(address).setPrefetch(n).handler((delivery, msg) -> ...).open()
                    // (README "Receiving"; ProtonReceiver.setPrefetch: "0 disables automatic prefetch credit
                    // handling; use flow(int) to grant credit manually"); auto-accept is the library's (default true).
                    receiver = conn.createReceiver(address);
                    receiver.setPrefetch(credit)
                        .handler((delivery, msg) -> inbox.add(body(msg)))
                        .closeHandler(r -> event("receiver closed by the broker" + (receiver.getRemoteCondition() != null
                            ? ": " + receiver.getRemoteCondition().getCondition() : "")))
                        .openHandler(r -> { if (r.succeeded()) f.complete(null); else f.completeExceptionally(r.cause()); })
                        .open();
                });
                return ",\"api\":" + q(manual ? "createReceiver().setPrefetch(0); flow(1) per receive; at its timeout drain(timeout, handler)"
                                              : "createReceiver().setPrefetch(" + credit + "), handler");
            }
            case "receive": {
                StringBuilder got = new StringBuilder();
                boolean timeout = false;
                int wait = num(a, "timeout_ms", 1000);
                for (int i = 0; i < num(a, "count", 1); i++) {
                    if (manual && inbox.isEmpty()) {
                        // ProtonReceiver.flow(credits): "For use when setPrefetch(int) has been used to disable
                        // automatic prefetch credit handling"
                        onContext(5000, (CompletableFuture<Void> f) -> {
                            // ProtonReceiver Javadoc: getCredit(), flow(credits)
                            if (receiver.getCredit() == 0) receiver.flow(1);
                            f.complete(null);
                        });
                    }
                    String m = inbox.poll(wait, TimeUnit.MILLISECONDS);
                    if (m == null && manual) {
                        // ProtonReceiver.drain(timeout, completionHandler): "handler called when credit hits 0 due to
                        // messages arriving, or a 'drain response' flow"
                        try {
                            onContext(wait + 1000, (CompletableFuture<Void> f) -> {
                                // ProtonReceiver Javadoc: getCredit(); drain(timeout, completionHandler)
                                if (receiver.getCredit() == 0) { f.complete(null); return; }
                                receiver.drain(wait, r -> f.complete(null));
                            });
                        } catch (java.util.concurrent.TimeoutException e) {
                            // the drain did not complete within its own timeout
                        }
                        m = inbox.poll();
                    }
                    if (m == null) { timeout = true; break; }
                    got.append(got.length() > 0 ? "," : "").append(q(m));
                }
                return ",\"messages\":[" + got + "],\"timeout\":" + timeout;
            }
            case "stop": {
                // ProtonReceiver.close() (ProtonLink Javadoc: "Closes the link")
                onContext(5000, (CompletableFuture<Void> f) -> { receiver.close(); f.complete(null); });
                return ",\"api\":" + q("receiver.close()");
            }
            case "sender": {
                String address = a.get("address");
                onContext(5000, (CompletableFuture<Void> f) -> {
                    // connection.createSender(address).open() (README "Sending"); a drain request is answered by the
                    // library: ProtonSender.setAutoDrained, "True by default" (the link is marked drained after the
                    // send queue drain handler fires in drain mode).
                    sender = conn.createSender(address);
                    sender.closeHandler(r -> event("sender closed by the broker"))
                          .openHandler(r -> { if (r.succeeded()) f.complete(null); else f.completeExceptionally(r.cause()); })
                          .open();
                });
                return ",\"api\":" + q("createSender().open(); send(message, onUpdated) while !sendQueueFull(), else sendQueueDrainHandler; auto-drained (default)");
            }
            case "send": {
                int count = num(a, "count", 1), wait = num(a, "timeout_ms", 5000);
                int[] sent = {0}, settled = {0};
                CompletableFuture<Void> all = new CompletableFuture<>();
                ctx.runOnContext(v -> {
                    Runnable[] pump = new Runnable[1];
                    pump[0] = () -> {
                        // ProtonSender.sendQueueFull(): "whether the senders outgoing send queue is full" (no credit);
                        // sendQueueDrainHandler: called when it is not any more (README "Sending": the
                        // "send queue drain handler" pattern).
                        while (sent[0] < count && !sender.sendQueueFull()) {
                            int i = sent[0]++;
                            // ProtonHelper.message(body) and sender.send(message, onUpdated) (README "Sending")
                            sender.send(ProtonHelper.message("m" + i), d -> {
                                if (d.remotelySettled() && ++settled[0] == count) all.complete(null);
                            });
                        }
                        if (sent[0] == count) sender.sendQueueDrainHandler(null);
                    };
                    sender.sendQueueDrainHandler(s -> pump[0].run());
                    pump[0].run();
                });
                try {
                    all.get((long) wait * count, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    return ",\"sent\":" + sent[0] + ",\"ok\":false,\"error\":" + q(settled[0] + " of " + count
                        + " messages sent and settled within " + (wait * count) + " ms (no credit, or no outcome)");
                }
                return ",\"sent\":" + sent[0];
            }
            case "close": {
                if (conn != null && ended) {
                    conn = null;        // closed by the broker (answered in closeHandler) or lost: nothing to wait for
                } else if (conn != null) {
                    try {
                        onContext(2000, (CompletableFuture<Void> f) -> {
                            // ProtonConnection.close() (ProtonConnection Javadoc); the closeHandler fires on the answer.
                            conn.closeHandler(r -> f.complete(null));
                            conn.close();
                        });
                    } catch (java.util.concurrent.TimeoutException e) {
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
        try (InputStream in = Driver.class.getResourceAsStream("/META-INF/maven/io.vertx/vertx-proton/pom.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (Exception e) {
            return "unknown";
        }
    }

    public static void main(String[] args) throws Exception {
        vertx = Vertx.vertx();
        ctx = vertx.getOrCreateContext();
        System.out.println("{\"id\":0,\"ok\":true,\"ready\":true,\"library\":\"vertx-proton\",\"version\":" + q(version()) + "}");
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
                Throwable cause = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                body = ",\"ok\":false,\"error\":" + q(cause.toString());
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
