package rmqbench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The Java side of rmq's interop tests of request-reply, priority and recall
 * (tests-integration/tests/request_reply.rs, priority.rs, recall.rs): the official remoting
 * client of the broker's version. The 5.x-only calls ({@code Message.setPriority},
 * {@code setDelayTimeMs}, {@code SendResult.getRecallHandle},
 * {@code DefaultMQProducer.recallMessage}) are made by reflection, so that the peer builds
 * against 4.9.x too.
 *
 * <pre>
 * java -cp ... rmqbench.FeaturePeer replier NAMESRV TOPIC GROUP
 * java -cp ... rmqbench.FeaturePeer request NAMESRV TOPIC GROUP BODY TIMEOUT_MS
 * java -cp ... rmqbench.FeaturePeer priority NAMESRV TOPIC GROUP BODY PRIORITY
 * java -cp ... rmqbench.FeaturePeer timer NAMESRV TOPIC GROUP BODY DELAY_MS
 * java -cp ... rmqbench.FeaturePeer recall NAMESRV TOPIC GROUP
 * </pre>
 * Prints one line per event on stdout: {@code replier}: {@code READY} once its push consumer
 * (group GROUP, from the first offset) runs, then {@code REPLIED <correlation id> <body>} per
 * request answered with {@code MessageUtil.createReplyMessage(request, "java reply to " + body)}
 * (until stdin closes); {@code request}: {@code REPLY <correlation id> <body>} or
 * {@code ERROR <exception> <message>}; {@code priority} and {@code timer}: {@code SENT <msg id>
 * <queue id> <recall handle or ->}; {@code recall}: {@code READY} once its producer runs, then
 * for each recall handle read from stdin (one a line) {@code RECALLED <msg id>} or
 * {@code ERROR <code> <message>}, until stdin closes. Then it exits.
 */
public final class FeaturePeer {
    private FeaturePeer() {
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }

    static DefaultMQProducer producer(String namesrv, String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName("featurepeer-" + ProcessHandle.current().pid());
        // A cold JVM on a busy machine can take more than the default 3 s for its first send
        // and its first route lookup.
        p.setSendMsgTimeout(15_000);
        p.setMqClientApiTimeout(15_000);
        p.start();
        return p;
    }

    /** Calls a 5.x-only method by reflection; its exception comes out unwrapped. */
    static Object call(Object target, String name, Class<?>[] types, Object... args) throws Exception {
        Method m = target.getClass().getMethod(name, types);
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
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

    static void run(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: FeaturePeer replier|request|priority|timer|recall NAMESRV TOPIC GROUP ...");
            System.exit(2);
        }
        String namesrv = args[1];
        String topic = args[2];
        String group = args[3];
        switch (args[0]) {
            case "replier":
                replier(namesrv, topic, group);
                return;
            case "request": {
                DefaultMQProducer p = producer(namesrv, group);
                try {
                    Message reply = p.request(new Message(topic, args[4].getBytes(StandardCharsets.UTF_8)),
                        Long.parseLong(args[5]));
                    say("REPLY " + reply.getProperty(MessageConst.PROPERTY_CORRELATION_ID) + " " + text(reply.getBody()));
                } catch (Exception e) {
                    say("ERROR " + e.getClass().getSimpleName() + " " + e.getMessage());
                }
                p.shutdown();
                return;
            }
            case "priority":
            case "timer": {
                DefaultMQProducer p = producer(namesrv, group);
                Message msg = new Message(topic, args[4].getBytes(StandardCharsets.UTF_8));
                if (args[0].equals("priority")) {
                    call(msg, "setPriority", new Class<?>[] {int.class}, Integer.parseInt(args[5]));
                } else {
                    call(msg, "setDelayTimeMs", new Class<?>[] {long.class}, Long.parseLong(args[5]));
                }
                SendResult r = p.send(msg);
                Object handle = call(r, "getRecallHandle", new Class<?>[] {});
                say("SENT " + r.getMsgId() + " " + r.getMessageQueue().getQueueId() + " "
                    + (handle == null ? "-" : handle));
                p.shutdown();
                return;
            }
            case "recall": {
                DefaultMQProducer p = producer(namesrv, group);
                // Connected before READY, so that a recall is quick: the topic's route, and a
                // heartbeat to its brokers (the JVM's first remoting calls take seconds).
                MQClientInstance factory = p.getDefaultMQProducerImpl().getMqClientFactory();
                factory.updateTopicRouteInfoFromNameServer(topic);
                factory.sendHeartbeatToAllBrokerWithLock();
                say("READY");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String handle = in.readLine(); handle != null; handle = in.readLine()) {
                    try {
                        Object id = call(p, "recallMessage", new Class<?>[] {String.class, String.class}, topic,
                            handle.trim());
                        say("RECALLED " + id);
                    } catch (MQBrokerException e) {
                        say("ERROR " + e.getResponseCode() + " " + e.getErrorMessage());
                    } catch (Exception e) {
                        say("ERROR " + e.getClass().getSimpleName() + " " + e.getMessage());
                    }
                }
                p.shutdown();
                return;
            }
            default:
                System.err.println("unknown command " + args[0]);
                System.exit(2);
        }
    }

    static void replier(String namesrv, String topic, String group) throws Exception {
        DefaultMQProducer producer = producer(namesrv, group + "-replier");
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("featurepeer-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setMqClientApiTimeout(15_000);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                try {
                    String body = text(m.getBody());
                    Message reply = MessageUtil.createReplyMessage(m, ("java reply to " + body)
                        .getBytes(StandardCharsets.UTF_8));
                    producer.send(reply, 15_000);
                    say("REPLIED " + m.getProperty(MessageConst.PROPERTY_CORRELATION_ID) + " " + body);
                } catch (Exception e) {
                    say("ERROR " + e.getClass().getSimpleName() + " " + e.getMessage() + " for "
                        + MessageClientIDSetter.getUniqID(m));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        say("READY");
        // Until the test closes stdin.
        while (System.in.read() != -1) {
            // keep reading
        }
        consumer.shutdown();
        producer.shutdown();
    }
}
