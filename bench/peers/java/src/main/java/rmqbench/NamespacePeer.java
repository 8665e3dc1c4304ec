package rmqbench;

import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The Java side of rmq's namespace interop test (tests-integration/tests/namespace.rs): the
 * official remoting client of the broker's version in a namespace. {@code v1} is
 * {@code ClientConfig.setNamespace} (4.x and 5.x; deprecated in 5.x), which wraps the topic and
 * group names in the client; {@code v2} is {@code setNamespaceV2} (5.x only, called by
 * reflection so that the peer builds against 4.9.x too), which only adds the {@code ns} and
 * {@code nsd} fields to every request.
 *
 * <pre>
 * java -cp ... rmqbench.NamespacePeer produce v1|v2 NAMESRV NAMESPACE TOPIC GROUP COUNT
 * java -cp ... rmqbench.NamespacePeer consume v1 NAMESRV NAMESPACE TOPIC GROUP
 * </pre>
 * Prints one line per event on stdout: {@code produce}: {@code SENT <msg id> <send result's
 * queue topic>} per message (bodies {@code java-0}, {@code java-1}, ...), or {@code ERROR
 * <exception> <message>} when the namespace cannot be set; {@code consume}: {@code READY} once
 * its push consumer (from the first offset) runs, then {@code GOT <message topic> <context queue
 * topic> <body>} per message, until stdin closes. Then it exits.
 */
public final class NamespacePeer {
    private NamespacePeer() {
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Exception e) {
            e.printStackTrace();
            // The client's threads would keep the JVM alive.
            System.exit(1);
        }
        System.exit(0);
    }

    /** Sets the namespace the way {@code version} says; false (after an ERROR line) when it cannot. */
    static boolean setNamespace(Object client, String version, String namespace) throws Exception {
        if (version.equals("v1")) {
            ((org.apache.rocketmq.client.ClientConfig) client).setNamespace(namespace);
            return true;
        }
        try {
            client.getClass().getMethod("setNamespaceV2", String.class).invoke(client, namespace);
            return true;
        } catch (NoSuchMethodException e) {
            say("ERROR NoSuchMethodException setNamespaceV2");
            return false;
        }
    }

    static void run(String[] args) throws Exception {
        if (args.length < 6) {
            System.err.println("usage: NamespacePeer produce|consume v1|v2 NAMESRV NAMESPACE TOPIC GROUP [COUNT]");
            System.exit(2);
        }
        String version = args[1];
        String namesrv = args[2];
        String namespace = args[3];
        String topic = args[4];
        String group = args[5];
        String instance = "nspeer-" + ProcessHandle.current().pid();
        switch (args[0]) {
            case "produce": {
                DefaultMQProducer p = new DefaultMQProducer(group);
                p.setNamesrvAddr(namesrv);
                p.setInstanceName(instance);
                // A cold JVM on a busy machine can take more than the default 3 s.
                p.setSendMsgTimeout(15_000);
                p.setMqClientApiTimeout(15_000);
                if (!setNamespace(p, version, namespace)) {
                    return;
                }
                p.start();
                int count = Integer.parseInt(args[6]);
                for (int i = 0; i < count; i++) {
                    SendResult r = p.send(new Message(topic, ("java-" + i).getBytes(StandardCharsets.UTF_8)));
                    say("SENT " + r.getMsgId() + " " + r.getMessageQueue().getTopic());
                }
                p.shutdown();
                return;
            }
            case "consume": {
                DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
                c.setNamesrvAddr(namesrv);
                c.setInstanceName(instance);
                c.setMqClientApiTimeout(15_000);
                c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                // Before subscribe: subscribe wraps the topic.
                if (!setNamespace(c, version, namespace)) {
                    return;
                }
                c.subscribe(topic, "*");
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        say("GOT " + m.getTopic() + " " + ctx.getMessageQueue().getTopic() + " "
                            + new String(m.getBody(), StandardCharsets.UTF_8));
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                c.start();
                say("READY");
                // Until the test closes stdin.
                while (System.in.read() != -1) {
                    // keep reading
                }
                c.shutdown();
                return;
            }
            default:
                System.err.println("unknown command " + args[0]);
                System.exit(2);
        }
    }
}
