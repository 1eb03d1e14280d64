// Client driver for Qpid JMS: the JSON-lines command protocol of clients/PROTOCOL.md.
// JMS_PACKAGE is javax.jms (qpid-jms 1.x) or jakarta.jms (2.x): the suite writes it in before compiling.
//
// Every call into the library carries a comment citing Qpid JMS's own documentation (qpid-jms-docs/
// Configuration.md) or example (qpid-jms-examples: Receiver.java, Sender.java), the same at the pinned
// releases 1.11.0 and 2.7.0. JMS gives the application no flow-control API: the provider grants credit from
// its prefetch policy and answers a drain on a producer's link itself; this driver reports no `drains`.
import JMS_PACKAGE.*;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Driver {
    static Connection conn;
    static Session session;
    static MessageConsumer consumer;
    static MessageProducer producer;
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

    static String run(String op, Map<String, String> a) throws Exception {
        switch (op) {
            case "connect": {
                // Configuration.md: "jms.prefetchPolicy.all used to set all prefetch values at once" (the suite
                // passes the receiver's credit as `prefetch`: JMS configures prefetch per connection URI),
                // "amqp.saslMechanisms", "amqp.idleTimeout", "jms.connectTimeout"
                String url = a.get("url") + "?jms.prefetchPolicy.all=" + num(a, "prefetch", 0)
                        + "&amqp.saslMechanisms=ANONYMOUS&amqp.idleTimeout=0&jms.connectTimeout=" + num(a, "timeout_ms", 5000);
                // Configuration.md "Connection URI": the options above "are appended to the connection URI";
                // the ConnectionFactory made from it directly (Configuration.md shows JmsConnectionFactory in code)
                ConnectionFactory f = new org.apache.qpid.jms.JmsConnectionFactory(url);
                // Receiver.java: factory.createConnection(...); connection.setExceptionListener(...); connection.start()
                conn = f.createConnection();
                conn.setExceptionListener(e -> { synchronized (events) { events.add("ExceptionListener: " + e); } });
                conn.start();
                // Receiver.java: connection.createSession(false, Session.AUTO_ACKNOWLEDGE)
                session = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
                return "";
            }
            case "receiver": {
                // Receiver.java: session.createConsumer(queue) (the queue: Session.createQueue, JMS API)
                consumer = session.createConsumer(session.createQueue(a.get("address")));
                return ",\"api\":" + q("createConsumer with jms.prefetchPolicy.all=" + num(a, "credit", 0) + ", receive(timeout)");
            }
            case "receive": {
                StringBuilder got = new StringBuilder();
                int count = num(a, "count", 1);
                boolean timeout = false;
                for (int i = 0; i < count; i++) {
                    // Receiver.java: messageConsumer.receive(timeout) (null: none within the timeout); the
                    // session's AUTO_ACKNOWLEDGE acknowledges it as receive returns it
                    Message m = consumer.receive(num(a, "timeout_ms", 1000));
                    if (m == null) { timeout = true; break; }
                    String body = m instanceof TextMessage ? ((TextMessage) m).getText() : String.valueOf(m.getBody(Object.class));
                    got.append(got.length() > 0 ? "," : "").append(q(body));
                }
                return ",\"messages\":[" + got + "],\"timeout\":" + timeout;
            }
            case "stop": {
                // JMS API MessageConsumer.close(): "Closes the message consumer"
                consumer.close();
                return ",\"api\":" + q("consumer.close()");
            }
            case "sender": {
                // Sender.java: session.createProducer(queue)
                producer = session.createProducer(session.createQueue(a.get("address")));
                return "";
            }
            case "send": {
                int sent = 0;
                try {
                    for (int i = 0; i < num(a, "count", 1); i++) {
                        // Sender.java: session.createTextMessage(...); messageProducer.send(message, ...) (here the
                        // JMS default delivery mode, PERSISTENT: the send completes when the peer settles it)
                        producer.send(session.createTextMessage("m" + i));
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
                // Receiver.java: connection.close()
                if (conn != null) conn.close();
                conn = null;
                return "";
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        String version = org.apache.qpid.jms.JmsConnectionFactory.class.getPackage().getImplementationVersion();
        System.out.println("{\"id\":0,\"ok\":true,\"ready\":true,\"library\":\"qpid-jms\",\"version\":" + q(version) + "}");
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
                body = ",\"ok\":false,\"error\":" + q(e.toString());
            }
            synchronized (events) {
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
