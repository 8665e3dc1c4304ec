package rmqbench;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The Java side of rmq's message trace interop test (tests-integration/tests/msg_trace_java.rs):
 * the official {@code DefaultMQProducer} and {@code DefaultMQPushConsumer}, both with message
 * trace on (their {@code AsyncTraceDispatcher} writes to {@code RMQ_SYS_TRACE_TOPIC}), so that rmq
 * decodes the records the Java client wrote.
 *
 * <pre>
 * java -cp ... rmqbench.TracePeer NAMESRV TOPIC PRODUCER_GROUP CONSUMER_GROUP COUNT
 * </pre>
 * Sends COUNT messages (tag {@code TagJ}, key {@code java-key-<i>}, body {@code java-<i>}),
 * consumes them and prints {@code DONE}; both stay up (their dispatchers writing the records in
 * the background) until stdin closes, then shut down. Lines: {@code SENT <msg id> <key>},
 * {@code CONSUMED <msg id>}, {@code DONE}, or {@code TIMEOUT} when the messages were not all
 * consumed within 90 s.
 */
public final class TracePeer {
    private TracePeer() {
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: TracePeer NAMESRV TOPIC PRODUCER_GROUP CONSUMER_GROUP COUNT");
            System.exit(1);
        }
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[4]);

        DefaultMQProducer producer = new DefaultMQProducer(args[2], true, null);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("trace-peer-producer");
        producer.start();
        for (int i = 0; i < count; i++) {
            String key = "java-key-" + i;
            Message msg = new Message(topic, "TagJ", key, ("java-" + i).getBytes(StandardCharsets.UTF_8));
            SendResult sent = producer.send(msg);
            say("SENT " + sent.getMsgId() + " " + key);
        }

        Set<String> seen = ConcurrentHashMap.newKeySet();
        CountDownLatch left = new CountDownLatch(count);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[3], true, null);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("trace-peer-consumer");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (seen.add(m.getMsgId())) {
                    say("CONSUMED " + m.getMsgId());
                    left.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        if (!left.await(90, TimeUnit.SECONDS)) {
            say("TIMEOUT");
            System.exit(2);
        }
        say("DONE");

        InputStream in = System.in;
        try {
            while (in.read() >= 0) {
                // until the test closes our stdin
            }
        } catch (IOException e) {
            // stdin gone: the test ended
        }
        consumer.shutdown();
        producer.shutdown();
        System.exit(0);
    }
}
