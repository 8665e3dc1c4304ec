package rmqbench;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The Java side of rmq's transactional interop test (tests-integration/tests/tx_java.rs): two
 * official {@code TransactionMQProducer}s in their own client instances.
 *
 * <ul>
 *   <li>the sender, in {@code sendGroup}: begins one transaction per body, every local transaction
 *       answering {@code UNKNOW}, then shuts down (leaving the group), so that the check-backs go to
 *       the other members of {@code sendGroup};</li>
 *   <li>the answerer, in {@code answerGroup}: heartbeats to the topic's brokers at once, stays until
 *       stdin closes and answers the check-backs of that group by body, as the rmq side does:
 *       {@code commit*} commits, {@code rollback*} rolls back, anything else is unknown.</li>
 * </ul>
 *
 * <pre>
 * java -cp ... rmqbench.TxPeer NAMESRV TOPIC SEND_GROUP ANSWER_GROUP BODY[,BODY...]
 * </pre>
 * Prints one line per event on stdout: {@code STARTED <answerer client id>}, {@code SENT <msg id>
 * <body> <local state>} per transaction, {@code READY} once the sender is shut down, and
 * {@code CHECK <msg id> <body> <commit|rollback|unknown>} per check-back the answerer answered.
 */
public final class TxPeer {
    private TxPeer() {
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static LocalTransactionState decide(byte[] body) {
        String text = new String(body, StandardCharsets.UTF_8);
        if (text.startsWith("commit")) {
            return LocalTransactionState.COMMIT_MESSAGE;
        }
        if (text.startsWith("rollback")) {
            return LocalTransactionState.ROLLBACK_MESSAGE;
        }
        return LocalTransactionState.UNKNOW;
    }

    static String name(LocalTransactionState state) {
        switch (state) {
            case COMMIT_MESSAGE: return "commit";
            case ROLLBACK_MESSAGE: return "rollback";
            default: return "unknown";
        }
    }

    static final class Listener implements TransactionListener {
        @Override
        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            return LocalTransactionState.UNKNOW;
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
            LocalTransactionState state = decide(msg.getBody());
            say("CHECK " + MessageClientIDSetter.getUniqID(msg) + " "
                + new String(msg.getBody(), StandardCharsets.UTF_8) + " " + name(state));
            return state;
        }
    }

    static TransactionMQProducer producer(String namesrv, String group, String instance) throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(instance);
        p.setTransactionListener(new Listener());
        // A cold JVM on a busy machine can take more than the default 3 s for its first route
        // lookup and send.
        p.setSendMsgTimeout(15_000);
        p.start();
        return p;
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
        if (args.length != 5) {
            System.err.println("usage: TxPeer NAMESRV TOPIC SEND_GROUP ANSWER_GROUP BODY[,BODY...]");
            System.exit(2);
        }
        String namesrv = args[0];
        String topic = args[1];
        long pid = ProcessHandle.current().pid();
        TransactionMQProducer answerer = producer(namesrv, args[3], "txpeer-answer-" + pid);
        // A producer that has not sent knows no broker, so it sends no heartbeat and gets no
        // check-back. The Java client has no public call for what rmq's `.topics([..])` does:
        // learn the topic's brokers now and heartbeat to them.
        MQClientInstance factory = answerer.getDefaultMQProducerImpl().getMqClientFactory();
        factory.updateTopicRouteInfoFromNameServer(topic);
        factory.sendHeartbeatToAllBrokerWithLock();
        say("STARTED " + answerer.buildMQClientId());
        TransactionMQProducer sender = producer(namesrv, args[2], "txpeer-send-" + pid);
        for (String body : args[4].split(",")) {
            if (body.isEmpty()) {
                continue;
            }
            Message msg = new Message(topic, body.getBytes(StandardCharsets.UTF_8));
            TransactionSendResult r = sender.sendMessageInTransaction(msg, null);
            say("SENT " + r.getMsgId() + " " + body + " " + name(r.getLocalTransactionState()));
        }
        sender.shutdown();
        say("READY");
        InputStream in = System.in;
        byte[] buf = new byte[64];
        try {
            while (in.read(buf) >= 0) {
                // until the test closes our stdin
            }
        } catch (IOException ignored) {
            // the test went away
        }
        answerer.shutdown();
    }
}
