/*
 * The amqp-conformance launcher of an ActiveMQ Classic node (5.15 ... 6.x): one BrokerService, compiled at
 * provisioning against the release's own jars (the same source for every release: only classes whose package
 * and signature are unchanged from 5.15 to 6.3 are used).
 *
 * What it starts, as an ActiveMQ user runs a broker: an AMQP 1.0 transport connector on 127.0.0.1 (the URI
 * options of ActiveMQ's shipped activemq.xml), SASL PLAIN for one user (the SimpleAuthenticationBroker that a
 * <simpleAuthenticationPlugin> installs; no anonymous access), a KahaDB store in the node's own directory, the
 * broker-wide memory, store and temp limits of ActiveMQ's shipped activemq.xml, and the MBeans in the JVM's own
 * MBean server without a JMX connector (no RMI port; the management hooks reach them over HTTP, as ActiveMQ's
 * web console serves them, through a Jolokia agent the suite adds to the JVM).
 *
 * Producer flow control as ActiveMQ's documentation (producer-flow-control.md) configures it to stop producers
 * at a memory limit: every queue with producerFlowControl and the <vmQueueCursor/> pending policy, which keeps
 * a queue's messages in memory, so that a queue's memoryLimit, and the broker's memoryUsage, hold durable
 * messages too (the default store cursor stops caching them at 70 % of the limit and pages them from the
 * store, so a memory limit never fills with them). And advisorySupport="false": before 6.3.0 (apache/activemq
 * #2071) every advisory message was sent under the ConnectionContext of the connection that caused it, with
 * that context's producerFlowControl switched off and back around the send (AdvisoryBroker.fireAdvisory); a
 * queue's dispatch thread fires the slow-consumer advisory (Queue.doActualDispatch: broker.slowConsumer) under
 * a consumer's context while that connection's own thread fires another (a consumer or producer attached), and
 * the two save-and-restore pairs can leave producer flow control off for the connection's whole life: a
 * publisher that shares its connection with a consumer is then never held (2.5.6/4: about 1 run in 4).
 * Advisories are an OpenWire feature; AMQP clients do not use them.
 *
 * Arguments: key=value (port, data, name, user, memory, store, temp); the password comes from the environment
 * variable AMQP_CONFORMANCE_ACTIVEMQ_PASSWORD (never on the command line). Prints "amqp-conformance: started"
 * once the broker runs; stops cleanly on SIGTERM (the broker's shutdown hook).
 */

import java.io.File;
import java.security.Principal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.activemq.broker.BrokerPlugin;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.broker.region.policy.VMPendingQueueMessageStoragePolicy;
import org.apache.activemq.security.SimpleAuthenticationBroker;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

public final class ActiveMQNode {

    private ActiveMQNode() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq < 1) {
                throw new IllegalArgumentException("expected key=value, got " + arg);
            }
            o.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String password = System.getenv("AMQP_CONFORMANCE_ACTIVEMQ_PASSWORD");
        if (password == null) {
            throw new IllegalArgumentException("AMQP_CONFORMANCE_ACTIVEMQ_PASSWORD is not set");
        }
        File data = new File(required(o, "data"));

        BrokerService broker = new BrokerService();
        broker.setBrokerName(required(o, "name"));
        broker.setDataDirectoryFile(data);
        broker.setPersistent(true);
        KahaDBPersistenceAdapter kahaDB = new KahaDBPersistenceAdapter();
        kahaDB.setDirectory(new File(data, "kahadb"));
        broker.setPersistenceAdapter(kahaDB);
        broker.setTmpDataDirectory(new File(data, "tmp_storage"));
        broker.setSchedulerSupport(false);
        broker.setAdvisorySupport(false);    // see above: advisories switch producer flow control off (before 6.3.0)
        broker.setUseJmx(true);
        broker.getManagementContext().setCreateConnector(false);

        // what <simpleAuthenticationPlugin> installs (SimpleAuthenticationBroker), without the plugin class itself:
        // it needs activemq-jaas (GroupPrincipal), which Maven Central does not serve for every release (6.2.2)
        String user = required(o, "user");
        Map<String, String> passwords = Collections.singletonMap(user, password);
        Map<String, Set<Principal>> groups = Collections.singletonMap(user, Collections.singleton(new Group("admins")));
        BrokerPlugin authentication = next -> {
            SimpleAuthenticationBroker checked = new SimpleAuthenticationBroker(next, passwords, groups);
            checked.setAnonymousAccessAllowed(false);
            return checked;
        };
        broker.setPlugins(new BrokerPlugin[] {authentication});

        PolicyEntry queues = new PolicyEntry();
        queues.setQueue(">");
        queues.setProducerFlowControl(true);
        queues.setPendingQueuePolicy(new VMPendingQueueMessageStoragePolicy());    // <vmQueueCursor/>
        PolicyEntry topics = new PolicyEntry();
        topics.setTopic(">");
        topics.setProducerFlowControl(true);
        PolicyMap policies = new PolicyMap();
        List<PolicyEntry> entries = new ArrayList<>();
        entries.add(queues);
        entries.add(topics);
        policies.setPolicyEntries(entries);
        broker.setDestinationPolicy(policies);

        broker.getSystemUsage().getMemoryUsage().setLimit(Long.parseLong(required(o, "memory")));
        broker.getSystemUsage().getStoreUsage().setLimit(Long.parseLong(required(o, "store")));
        broker.getSystemUsage().getTempUsage().setLimit(Long.parseLong(required(o, "temp")));

        broker.addConnector("amqp://127.0.0.1:" + Integer.parseInt(required(o, "port"))
                + "?maximumConnections=1000&wireFormat.maxFrameSize=104857600");
        broker.start();
        if (!broker.waitUntilStarted()) {
            System.err.println("amqp-conformance: the broker did not start");
            System.exit(1);
        }
        System.out.println("amqp-conformance: started");
        System.out.flush();
        broker.waitUntilStopped();
    }

    /** A group of the user (what activemq-jaas' GroupPrincipal is to the plugin). */
    private static final class Group implements Principal {
        private final String name;

        Group(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }
    }

    private static String required(Map<String, String> o, String key) {
        String value = o.get(key);
        if (value == null) {
            throw new IllegalArgumentException("missing argument " + key + "=...");
        }
        return value;
    }
}
