/*
 * Generates rebalance/tests/data/java_vectors.json: the queue allocation of the
 * real Java client (org.apache.rocketmq:rocketmq-client 5.5.0) for a grid of
 * inputs, so the Rust strategies can be checked against it. See
 * ../data/README.md for the exact command. Deterministic: the same JDK and
 * client version always produce the same file.
 *
 * JSON layout:
 *   inputs[i] = { topic, mqs: [[brokerName, queueId], ...] (unsorted),
 *                 cids: [...] (unsorted),
 *                 mqOrder / cidOrder: indices into mqs / cids in the order
 *                 Java's Collections.sort puts them }
 *   cases[j]  = { input, strategy, [virtualNodes], [consumeridcs], [inner],
 *                 results: results[k] = indices into mqs allocated to cids[k],
 *                 in the order the Java strategy returned them }
 * Every strategy is called with the Java-sorted lists, once per consumer id.
 */

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

public class AllocVectors {
    private static final Random RND = new Random(20240917L);
    private static final StringBuilder INPUTS = new StringBuilder();
    private static final StringBuilder CASES = new StringBuilder();
    private static int inputCount = 0;
    private static int caseCount = 0;

    /** One generated input: raw (unsorted) lists plus the sorted copies. */
    static final class Input {
        final int id;
        final List<MessageQueue> mqs;
        final List<String> cids;
        final List<MessageQueue> mqSorted;
        final List<String> cidSorted;

        Input(String topic, List<MessageQueue> mqs, List<String> cids) {
            this.mqs = mqs;
            this.cids = cids;
            this.mqSorted = new ArrayList<>(mqs);
            Collections.sort(this.mqSorted);
            this.cidSorted = new ArrayList<>(cids);
            Collections.sort(this.cidSorted);
            this.id = inputCount++;
            // Identity lookup: raw index of each MessageQueue object.
            IdentityHashMap<MessageQueue, Integer> mqIndex = new IdentityHashMap<>();
            for (int i = 0; i < mqs.size(); i++) {
                mqIndex.put(mqs.get(i), i);
            }
            List<Integer> mqOrder = new ArrayList<>();
            for (MessageQueue mq : mqSorted) {
                mqOrder.add(mqIndex.get(mq));
            }
            // cids may contain duplicates: match sorted entries to raw ones in order.
            boolean[] used = new boolean[cids.size()];
            List<Integer> cidOrder = new ArrayList<>();
            for (String c : cidSorted) {
                for (int i = 0; i < cids.size(); i++) {
                    if (!used[i] && cids.get(i).equals(c)) {
                        used[i] = true;
                        cidOrder.add(i);
                        break;
                    }
                }
            }
            if (INPUTS.length() > 0) {
                INPUTS.append(",\n");
            }
            INPUTS.append("{\"topic\":").append(str(topic)).append(",\"mqs\":[");
            for (int i = 0; i < mqs.size(); i++) {
                MessageQueue mq = mqs.get(i);
                INPUTS.append(i == 0 ? "" : ",").append('[').append(str(mq.getBrokerName())).append(',')
                    .append(mq.getQueueId()).append(']');
            }
            INPUTS.append("],\"cids\":[");
            for (int i = 0; i < cids.size(); i++) {
                INPUTS.append(i == 0 ? "" : ",").append(str(cids.get(i)));
            }
            INPUTS.append("],\"mqOrder\":").append(ints(mqOrder)).append(",\"cidOrder\":").append(ints(cidOrder))
                .append('}');
        }

        int rawIndex(MessageQueue mq) {
            for (int i = 0; i < mqs.size(); i++) {
                if (mqs.get(i).equals(mq)) {
                    return i;
                }
            }
            throw new IllegalStateException("allocated queue not in input: " + mq);
        }
    }

    static void runCase(Input in, AllocateMessageQueueStrategy s, String extraJson) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"input\":").append(in.id).append(",\"strategy\":").append(str(s.getName()));
        sb.append(extraJson).append(",\"results\":[");
        for (int k = 0; k < in.cids.size(); k++) {
            List<MessageQueue> got = s.allocate("please_rename_unique_group_name", in.cids.get(k),
                new ArrayList<>(in.mqSorted), new ArrayList<>(in.cidSorted));
            List<Integer> idx = new ArrayList<>();
            for (MessageQueue mq : got) {
                idx.add(in.rawIndex(mq));
            }
            sb.append(k == 0 ? "" : ",").append(ints(idx));
        }
        sb.append("]}");
        if (CASES.length() > 0) {
            CASES.append(",\n");
        }
        CASES.append(sb);
        caseCount++;
    }

    static List<MessageQueue> queues(String topic, String[] brokers, int[] perBroker) {
        List<MessageQueue> mqs = new ArrayList<>();
        for (int b = 0; b < brokers.length; b++) {
            for (int q = 0; q < perBroker[b]; q++) {
                mqs.add(new MessageQueue(topic, brokers[b], q));
            }
        }
        Collections.shuffle(mqs, RND);
        return mqs;
    }

    static List<String> clientIds(int n) {
        Set<String> ids = new LinkedHashSet<>();
        while (ids.size() < n) {
            String ip = (RND.nextBoolean() ? "192.168." : "10.0.") + RND.nextInt(4) + "." + (1 + RND.nextInt(254));
            String instance = RND.nextInt(3) == 0 ? "DEFAULT" : Integer.toString(1000 + RND.nextInt(60000));
            if (RND.nextInt(4) == 0) {
                instance = instance + "#" + (100000 + RND.nextInt(900000));
            }
            ids.add(ip + "@" + instance);
        }
        List<String> out = new ArrayList<>(ids);
        Collections.shuffle(out, RND);
        return out;
    }

    static String[] pick(String[] names, int n) {
        return Arrays.copyOf(names, n);
    }

    public static void main(String[] args) throws Exception {
        String[] topics = {"TopicTest", "%RETRY%please_rename_unique_group_name", "orders-v2"};
        String[][] brokerSets = {
            {"broker-a", "broker-b", "broker-c"},
            {"broker-9", "broker-10", "broker-11"},
        };
        int[][] layouts = {
            {1}, {2}, {3}, {4}, {5}, {7}, {8}, {16}, {24},
            {1, 1}, {2, 2}, {4, 4}, {8, 8}, {4, 2}, {16, 16}, {3, 5},
            {1, 1, 1}, {2, 2, 2}, {4, 4, 4}, {8, 8, 8}, {16, 16, 16}, {4, 2, 1}, {1, 8, 3},
        };
        int[] consumerCounts = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 33};

        AllocateMessageQueueStrategy avg = new AllocateMessageQueueAveragely();
        AllocateMessageQueueStrategy circle = new AllocateMessageQueueAveragelyByCircle();
        AllocateMessageQueueStrategy ch10 = new AllocateMessageQueueConsistentHash();
        AllocateMessageQueueStrategy ch3 = new AllocateMessageQueueConsistentHash(3);

        // 1. The main grid.
        int n = 0;
        for (int[] layout : layouts) {
            for (int c : consumerCounts) {
                String topic = topics[n % topics.length];
                String[] brokers = pick(brokerSets[(n / topics.length) % brokerSets.length], layout.length);
                n++;
                Input in = new Input(topic, queues(topic, brokers, layout), clientIds(c));
                runCase(in, avg, "");
                runCase(in, circle, "");
                runCase(in, ch10, ",\"virtualNodes\":10");
                runCase(in, ch3, ",\"virtualNodes\":3");
            }
        }

        // 2. Names whose UTF-16 order differs from their UTF-8 byte order
        //    (U+1F600 vs U+FFFD), plus non-ASCII text hashed as UTF-8.
        String[] uniBrokers = {"broker-\uD83D\uDE00", "broker-\uFFFD", "broker-\u00e9"};
        for (int c : new int[] {1, 2, 3, 5}) {
            List<String> cids = new ArrayList<>(Arrays.asList(
                "c-\uD83D\uDE00@1", "c-\uFFFD@2", "c-\u00e9@3", "c-z@4", "c-\u4e2d@5"));
            cids = new ArrayList<>(cids.subList(0, c));
            Collections.shuffle(cids, RND);
            Input in = new Input("TopicTest", queues("TopicTest", uniBrokers, new int[] {3, 2, 2}), cids);
            runCase(in, avg, "");
            runCase(in, circle, "");
            runCase(in, ch10, ",\"virtualNodes\":10");
            runCase(in, ch3, ",\"virtualNodes\":3");
        }

        // 3. Consistent hash edge cases: 0 and 1 virtual nodes, duplicated ids.
        {
            Input in = new Input("TopicTest", queues("TopicTest", pick(brokerSets[0], 2), new int[] {4, 4}),
                clientIds(4));
            runCase(in, new AllocateMessageQueueConsistentHash(0), ",\"virtualNodes\":0");
            runCase(in, new AllocateMessageQueueConsistentHash(1), ",\"virtualNodes\":1");
            runCase(in, new AllocateMessageQueueConsistentHash(100), ",\"virtualNodes\":100");
            List<String> dup = clientIds(3);
            dup.add(dup.get(0));
            dup.add(dup.get(1));
            dup.add(dup.get(0));
            Collections.shuffle(dup, RND);
            Input d = new Input("TopicTest", queues("TopicTest", pick(brokerSets[0], 3), new int[] {4, 4, 4}), dup);
            runCase(d, avg, "");
            runCase(d, circle, "");
            runCase(d, ch10, ",\"virtualNodes\":10");
            runCase(d, ch3, ",\"virtualNodes\":3");
        }

        // 4. AllocateMessageQueueByMachineRoom: "room@broker" names, odd splits included.
        String[] roomBrokers = {"room1@broker-a", "room2@broker-b", "room1@broker-c", "room3@broker-d",
            "room1@x@y", "room2@", "@broker-z", "room2@broker-e@", "plain-broker"};
        List<List<String>> idcSets = Arrays.asList(
            Arrays.asList("room1"), Arrays.asList("room1", "room2"), Arrays.asList("room2", ""),
            Arrays.asList("room9"), Arrays.asList("room1", "room2", "room3"));
        for (int c = 1; c <= 6; c++) {
            Input in = new Input("TopicTest",
                queues("TopicTest", roomBrokers, new int[] {4, 4, 2, 3, 2, 2, 2, 2, 2}), clientIds(c));
            for (List<String> idcs : idcSets) {
                AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
                s.setConsumeridcs(new TreeSet<>(idcs));
                StringBuilder extra = new StringBuilder(",\"consumeridcs\":[");
                for (int i = 0; i < idcs.size(); i++) {
                    extra.append(i == 0 ? "" : ",").append(str(idcs.get(i)));
                }
                runCase(in, s, extra.append(']').toString());
            }
        }

        // 5. AllocateMachineRoomNearby: broker room = text before the first '@' of
        //    the broker name, consumer room = text before the first '-' of the id.
        AllocateMachineRoomNearby.MachineRoomResolver resolver = new AllocateMachineRoomNearby.MachineRoomResolver() {
            @Override
            public String brokerDeployIn(MessageQueue mq) {
                return mq.getBrokerName().split("@")[0];
            }

            @Override
            public String consumerDeployIn(String clientID) {
                return clientID.split("-")[0];
            }
        };
        String[] nearbyBrokers = {"room1@broker-a", "room2@broker-b", "room3@broker-c", "room1@broker-d"};
        String[][] cidRooms = {
            {"room1"}, {"room1", "room2"}, {"room1", "room1", "room2"}, {"room2", "room3", "room1", "room1"},
            {"room4"}, {"room4", "room2"}, {"room3", "room3", "room3"}, {"room1", "room2", "room3", "room4", "room2"},
        };
        Map<String, AllocateMessageQueueStrategy> inners = new java.util.LinkedHashMap<>();
        inners.put("AVG", avg);
        inners.put("AVG_BY_CIRCLE", circle);
        inners.put("CONSISTENT_HASH", ch10);
        for (String[] rooms : cidRooms) {
            List<String> base = clientIds(rooms.length);
            List<String> cids = new ArrayList<>();
            for (int i = 0; i < rooms.length; i++) {
                cids.add(rooms[i] + "-" + base.get(i));
            }
            Input in = new Input("TopicTest", queues("TopicTest", nearbyBrokers, new int[] {4, 3, 2, 4}), cids);
            for (Map.Entry<String, AllocateMessageQueueStrategy> e : inners.entrySet()) {
                String extra = ",\"inner\":" + str(e.getKey())
                    + (e.getKey().equals("CONSISTENT_HASH") ? ",\"virtualNodes\":10" : "");
                runCase(in, new AllocateMachineRoomNearby(e.getValue(), resolver), extra);
            }
        }

        String version = AllocateMessageQueueAveragely.class.getPackage().getImplementationVersion();
        try (PrintWriter out = new PrintWriter(args[0], StandardCharsets.UTF_8)) {
            out.print("{\"generator\":\"rebalance/tests/java/AllocVectors.java\",\"rocketmqClient\":\"5.5.0\",\n");
            out.print("\"inputs\":[\n" + INPUTS + "\n],\n\"cases\":[\n" + CASES + "\n]}\n");
        }
        System.err.println("wrote " + inputCount + " inputs, " + caseCount + " cases to " + args[0]
            + " (jar implementation version: " + version + ")");
    }

    static String ints(List<Integer> xs) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < xs.size(); i++) {
            sb.append(i == 0 ? "" : ",").append(xs.get(i));
        }
        return sb.append(']').toString();
    }

    /** A JSON string literal, ASCII only (non-ASCII as UTF-16 \\u escapes). */
    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '"' || ch == '\\') {
                sb.append('\\').append(ch);
            } else if (ch < 0x20 || ch > 0x7e) {
                sb.append(String.format("\\u%04x", (int) ch));
            } else {
                sb.append(ch);
            }
        }
        return sb.append('"').toString();
    }
}
