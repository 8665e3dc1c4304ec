package rmqbench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Send-throughput program on the official Java client, equivalent to rocketmq-example's
 * {@code org.apache.rocketmq.example.benchmark.Producer} (same producer settings: compression off,
 * instance name per run; sync: {@code threads} threads each sending its share and waiting for every
 * answer; async: one thread handing every message to {@code send(msg, callback)}), but measured
 * like rmq-bench's produce mode: it waits for every callback before it reports. bench/run.sh uses
 * it for java-producer async, because the official Producer with {@code -q N -y true} prints its
 * final figures before the callbacks of the sends have run (it reported 9 of 20 000 sends), and for
 * java-producer tx: the sync threads with {@code TransactionMQProducer.sendMessageInTransaction},
 * local transactions committing at once.
 *
 * <pre>
 * java -cp ... rmqbench.Produce --namesrv ADDR --topic T --count N --size S --mode sync|async|tx
 *      [--threads 64] [--inflight 1000] [--auto-batch 1 [--batch-delay-ms 5] [--batch-max-bytes 32768]]
 * </pre>
 * {@code --auto-batch 1}: the producer's auto-batching ({@code DefaultMQProducer#setAutoBatch}, 5.x;
 * {@code batchMaxDelayMs}, {@code batchMaxBytes}), set by reflection so that the program still
 * builds against 4.9.x, where it is refused (exit 3); the result line names the client
 * {@code java-producer-batching}.
 * Prints {@code RESULT {json}}: msgs_per_s = successes / (first send .. last answer), as rmq-bench
 * measures; windowed_msgs_per_s = the official Producer's "Send TPS" way (successes per second
 * between the first and the last of the last ten one-second snapshots), for reference.
 */
public final class Produce {
    private Produce() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = System.getenv().getOrDefault("NAMESRV_ADDR", "127.0.0.1:9876");
        String topic = null;
        long count = 0;
        int size = 1024;
        String mode = "sync";
        int threads = 64;
        int inflight = 1_000;
        boolean autoBatch = false;
        int batchDelayMs = 5;
        long batchMaxBytes = 32 * 1024;
        for (int i = 0; i + 1 < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--namesrv": namesrv = v; break;
                case "--topic": topic = v; break;
                case "--count": count = Long.parseLong(v); break;
                case "--size": size = Integer.parseInt(v); break;
                case "--mode": mode = v; break;
                case "--threads": threads = Integer.parseInt(v); break;
                case "--inflight": inflight = Integer.parseInt(v); break;
                case "--auto-batch": autoBatch = v.equals("1"); break;
                case "--batch-delay-ms": batchDelayMs = Integer.parseInt(v); break;
                case "--batch-max-bytes": batchMaxBytes = Long.parseLong(v); break;
                default:
                    System.err.println("java-produce: unknown flag " + args[i]);
                    System.exit(2);
            }
        }
        if (topic == null || count <= 0 || !(mode.equals("sync") || mode.equals("async") || mode.equals("tx"))) {
            System.err.println("java-produce: --topic, --count and --mode sync|async|tx are required");
            System.exit(2);
        }
        final byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + (i + i / 26) % 26);
        }
        final AtomicLong ok = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final List<long[]> snapshots = new ArrayList<>();
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "snapshot");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(() -> {
            synchronized (snapshots) {
                snapshots.add(new long[] {System.nanoTime(), ok.get()});
                if (snapshots.size() > 10) {
                    snapshots.remove(0);
                }
            }
        }, 1, 1, TimeUnit.SECONDS);

        final boolean tx = mode.equals("tx");
        DefaultMQProducer producer;
        if (tx) {
            // Local transactions that commit at once: the protocol is what is measured.
            TransactionMQProducer txProducer = new TransactionMQProducer("benchmark_tx_producer");
            txProducer.setTransactionListener(new TransactionListener() {
                @Override
                public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }

                @Override
                public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
            });
            producer = txProducer;
        } else {
            producer = new DefaultMQProducer("benchmark_producer");
        }
        producer.setInstanceName(Long.toString(System.currentTimeMillis()));
        producer.setNamesrvAddr(namesrv);
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        if (autoBatch) {
            if (tx) {
                System.err.println("java-produce: --auto-batch does not go with --mode tx");
                System.exit(2);
            }
            try {
                producer.getClass().getMethod("setAutoBatch", boolean.class).invoke(producer, true);
                producer.getClass().getMethod("batchMaxDelayMs", int.class).invoke(producer, batchDelayMs);
                producer.getClass().getMethod("batchMaxBytes", long.class).invoke(producer, batchMaxBytes);
            } catch (NoSuchMethodException e) {
                System.err.println("java-produce: this rocketmq-client has no auto-batching (" + e.getMessage() + ")");
                System.exit(3);
            }
        }
        producer.start();

        final String t = topic;
        long started = System.nanoTime();
        if (mode.equals("sync") || tx) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            for (int i = 0; i < threads; i++) {
                final long share = count / threads + (i < count % threads ? 1 : 0);
                pool.execute(() -> {
                    for (long n = 0; n < share; n++) {
                        try {
                            if (!tx) {
                                producer.send(new Message(t, body));
                                ok.incrementAndGet();
                            } else if (producer.sendMessageInTransaction(new Message(t, body), null)
                                .getLocalTransactionState() == LocalTransactionState.COMMIT_MESSAGE) {
                                ok.incrementAndGet();
                            } else {
                                failed.incrementAndGet();
                            }
                        } catch (Exception e) {
                            failed.incrementAndGet();
                        }
                    }
                });
            }
            pool.shutdown();
            pool.awaitTermination(1, TimeUnit.DAYS);
        } else {
            final Semaphore permits = new Semaphore(inflight);
            for (long n = 0; n < count; n++) {
                permits.acquire();
                try {
                    producer.send(new Message(t, body), new SendCallback() {
                        @Override
                        public void onSuccess(SendResult r) {
                            ok.incrementAndGet();
                            permits.release();
                        }

                        @Override
                        public void onException(Throwable e) {
                            failed.incrementAndGet();
                            permits.release();
                        }
                    });
                } catch (Exception e) {
                    failed.incrementAndGet();
                    permits.release();
                }
            }
            permits.acquire(inflight);
        }
        double elapsed = (System.nanoTime() - started) / 1e9;
        timer.shutdownNow();
        long okCount = ok.get();
        double overall = elapsed > 0 ? okCount / elapsed : 0;
        double windowed = overall;
        synchronized (snapshots) {
            if (snapshots.size() >= 2) {
                long[] first = snapshots.get(0);
                long[] last = snapshots.get(snapshots.size() - 1);
                if (last[1] > first[1]) {
                    windowed = (last[1] - first[1]) / ((last[0] - first[0]) / 1e9);
                }
            }
        }
        System.out.printf(Locale.ROOT,
            "RESULT {\"client\":\"%s\",\"mode\":\"%s\",\"count\":%d,\"failed\":%d,\"elapsed_s\":%.6f,"
                + "\"msgs_per_s\":%.1f,\"windowed_msgs_per_s\":%.1f}%n",
            autoBatch ? "java-producer-batching" : "java-producer", mode, okCount, failed.get(), elapsed,
            overall, windowed);
        System.out.flush();
        producer.shutdown();
        System.exit(0);
    }
}
