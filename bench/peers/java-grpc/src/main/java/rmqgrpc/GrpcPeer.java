package rmqgrpc;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * The Java side of rmq's gRPC interop test (tests-integration/tests/grpc_java.rs): the official
 * RocketMQ 5.x gRPC client ({@code rocketmq-client-java}) against the proxy.
 *
 * <pre>
 * java -cp ... rmqgrpc.GrpcPeer produce ENDPOINT TOPIC COUNT
 * java -cp ... rmqgrpc.GrpcPeer consume ENDPOINT TOPIC GROUP COUNT
 * </pre>
 * {@code produce} sends COUNT messages (body {@code java grpc body <i>}, tag {@code tag<i>}, keys
 * {@code key-<i>} and {@code other-<i>}, properties {@code user-a=value <i>} and
 * {@code user-b=ünïcode ✓}) and prints {@code SENT <message id> <i>} for each, then {@code DONE}.
 * {@code consume} prints {@code READY}, receives and acks until COUNT distinct messages came, printing
 * {@code GOT <message id> <tag> <keys> <body> <properties> <delivery attempt>} for each (every field
 * but the id and the attempt hex-encoded UTF-8; keys and properties joined by U+0001, properties as
 * {@code k=v} in key order), then {@code DONE}. Both exit when done.
 */
public final class GrpcPeer {
    private static final String SEP = "\u0001";

    private GrpcPeer() {
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String hex(String text) {
        StringBuilder out = new StringBuilder();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            out.append(String.format("%02x", b));
        }
        return out.length() == 0 ? "-" : out.toString();
    }

    private static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            throw new IllegalArgumentException("usage: produce ENDPOINT TOPIC COUNT | consume ENDPOINT TOPIC GROUP COUNT");
        }
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        String endpoint = args[1];
        String topic = args[2];
        if (args[0].equals("produce")) {
            int count = Integer.parseInt(args[3]);
            try (Producer producer = provider.newProducerBuilder()
                .setClientConfiguration(config(endpoint))
                .setTopics(topic)
                .build()) {
                for (int i = 0; i < count; i++) {
                    Message m = provider.newMessageBuilder()
                        .setTopic(topic)
                        .setBody(("java grpc body " + i).getBytes(StandardCharsets.UTF_8))
                        .setTag("tag" + i)
                        .setKeys("key-" + i, "other-" + i)
                        .addProperty("user-a", "value " + i)
                        .addProperty("user-b", "ünïcode ✓")
                        .build();
                    SendReceipt receipt = producer.send(m);
                    say("SENT " + receipt.getMessageId() + " " + i);
                }
            }
            say("DONE");
            return;
        }
        if (!args[0].equals("consume") || args.length < 5) {
            throw new IllegalArgumentException("usage: consume ENDPOINT TOPIC GROUP COUNT");
        }
        String group = args[3];
        int count = Integer.parseInt(args[4]);
        try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(config(endpoint))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(5))
            .build()) {
            say("READY");
            Set<String> seen = new HashSet<>();
            while (seen.size() < count) {
                List<MessageView> views = consumer.receive(32, Duration.ofSeconds(30));
                for (MessageView v : views) {
                    consumer.ack(v);
                    String id = v.getMessageId().toString();
                    seen.add(id);
                    ByteBuffer body = v.getBody();
                    byte[] bytes = new byte[body.remaining()];
                    body.get(bytes);
                    List<String> keys = new ArrayList<>(v.getKeys());
                    Map<String, String> props = new TreeMap<>(v.getProperties());
                    List<String> kv = new ArrayList<>();
                    for (Map.Entry<String, String> e : props.entrySet()) {
                        kv.add(e.getKey() + "=" + e.getValue());
                    }
                    say("GOT " + id + " " + hex(v.getTag().orElse("")) + " " + hex(String.join(SEP, keys)) + " "
                        + hex(new String(bytes, StandardCharsets.UTF_8)) + " " + hex(String.join(SEP, kv)) + " "
                        + v.getDeliveryAttempt());
                }
            }
        }
        say("DONE");
    }
}
