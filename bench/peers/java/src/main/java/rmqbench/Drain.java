package rmqbench;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Drain / latency peer on the official Java client's DefaultMQPushConsumer, for bench/run.sh.
 *
 * <pre>
 * java -cp target/classes:target/lib/* rmqbench.Drain --namesrv ADDR --topic T[,T2...] --group G --expect N
 *      [--threads 20] [--batch 32] [--latency-skip K] [--timeout-s 600]
 * </pre>
 *
 * Fresh group, CONSUME_FROM_FIRST_OFFSET, no-op listener, consumeThreadMin = Max = threads,
 * pullBatchSize = batch, consumeMessageBatchMaxSize 1. Prints READY once started and one
 * {@code RESULT {json}} line at the end. With --latency-skip, bodies carry [send time in us since
 * the epoch, big-endian u64][sequence number, u64]; messages with sequence >= skip record
 * receive time - send time.
 */
public final class Drain {
    private static final Object TIMES_LOCK = new Object();
    private static long firstNanos = 0;
    private static long lastNanos = 0;
    private static long[] latencies = new long[1 << 16];
    private static long[] storeDelays = new long[1 << 16];
    private static int latencyCount = 0;

    private Drain() {
    }

    private static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000L;
    }

    /** One measured message: its end-to-end latency and its send-to-store delay, in us. */
    private static synchronized void addLatency(long us, long storeUs) {
        if (latencyCount == latencies.length) {
            latencies = Arrays.copyOf(latencies, latencies.length * 2);
            storeDelays = Arrays.copyOf(storeDelays, storeDelays.length * 2);
        }
        storeDelays[latencyCount] = storeUs;
        latencies[latencyCount++] = us;
    }

    private static double percentile(long[] sorted, int n, double p) {
        if (n == 0) {
            return 0.0;
        }
        int idx = (int) Math.ceil(p * n);
        idx = Math.max(1, Math.min(n, idx)) - 1;
        return sorted[idx] / 1000.0;
    }

    private static DefaultMQPushConsumer newConsumer(String namesrv, String group, String topic, int threads, int batch,
            boolean pop, long skip, long expected, AtomicLong count, CountDownLatch done, int attempt) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        // A client instance of its own per attempt: a failed start leaves its instance behind.
        consumer.setInstanceName("bench-" + ProcessHandle.current().pid() + "-" + attempt);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        consumer.setPullBatchSize(batch);
        consumer.setConsumeMessageBatchMaxSize(1);
        if (pop) {
            // RocketMQ 5 clients only: the broker assigns the queues and, with the group's request
            // mode POP (set beforehand by rmq-bench set-pop-mode), the consumer pops them.
            consumer.getClass().getMethod("setClientRebalance", boolean.class).invoke(consumer, false);
        }
        // --topic A,B,...: every topic subscribed (bench/run.sh --scenarios scale, 100 topics).
        for (String t : topic.split(",")) {
            if (!t.isEmpty()) {
                consumer.subscribe(t, "*");
            }
        }
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.nanoTime();
            if (skip >= 0) {
                long recv = nowMicros();
                for (MessageExt m : msgs) {
                    byte[] body = m.getBody();
                    if (body != null && body.length >= 16) {
                        ByteBuffer buf = ByteBuffer.wrap(body);
                        long sent = buf.getLong(0);
                        long seq = buf.getLong(8);
                        if (seq >= skip) {
                            // store timestamp - born timestamp (ms): the broker's store time after the send
                            addLatency(Math.max(0, recv - sent),
                                Math.max(0, m.getStoreTimestamp() - m.getBornTimestamp()) * 1000L);
                        }
                    }
                }
            }
            synchronized (TIMES_LOCK) {
                if (firstNanos == 0) {
                    firstNanos = now;
                }
                lastNanos = now;
            }
            long n = msgs.size();
            long after = count.addAndGet(n);
            if (after >= expected && after - n < expected) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return consumer;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = System.getenv().getOrDefault("NAMESRV_ADDR", "127.0.0.1:9876");
        String topic = null;
        String group = null;
        long expect = 0;
        int threads = 20;
        int batch = 32;
        long latencySkip = -1;
        long timeoutS = 600;
        boolean pop = false;
        for (int i = 0; i + 1 < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--namesrv": namesrv = v; break;
                case "--topic": topic = v; break;
                case "--group": group = v; break;
                case "--expect": expect = Long.parseLong(v); break;
                case "--threads": threads = Integer.parseInt(v); break;
                case "--batch": batch = Integer.parseInt(v); break;
                case "--latency-skip": latencySkip = Long.parseLong(v); break;
                case "--timeout-s": timeoutS = Long.parseLong(v); break;
                case "--pop": pop = "1".equals(v); break;
                default:
                    System.err.println("java-peer: unknown flag " + args[i]);
                    System.exit(2);
            }
        }
        if (topic == null || group == null || expect <= 0) {
            System.err.println("java-peer: --topic, --group and --expect are required");
            System.exit(2);
        }
        final long expected = expect;
        final long skip = latencySkip;
        final AtomicLong count = new AtomicLong();
        final CountDownLatch done = new CountDownLatch(1);

        // The client's start fails now and then on a loaded machine (the route request to the name
        // server: RemotingSendRequestException) and a failed consumer cannot start again: a new one is
        // built, up to five times. Without this the JVM kept running after the exception, never READY.
        DefaultMQPushConsumer consumer = null;
        long started = System.nanoTime();
        for (int attempt = 1; consumer == null; attempt++) {
            DefaultMQPushConsumer c = newConsumer(namesrv, group, topic, threads, batch, pop, skip, expected, count, done,
                attempt);
            started = System.nanoTime();
            try {
                c.start();
                consumer = c;
            } catch (Exception e) {
                System.err.println("java-peer: start attempt " + attempt + " failed: " + e);
                c.shutdown();
                if (attempt == 5) {
                    System.exit(1);
                }
                Thread.sleep(1000);
            }
        }
        System.out.println("READY");
        System.out.flush();
        boolean finished = done.await(timeoutS, TimeUnit.SECONDS);

        long c = count.get();
        long first;
        long last;
        synchronized (TIMES_LOCK) {
            first = firstNanos;
            last = lastNanos;
        }
        double elapsed = first == 0 ? 0.0 : (last - first) / 1e9;
        double startup = first == 0 ? 0.0 : (first - started) / 1e9;
        long[] lat;
        long[] store;
        int n;
        synchronized (Drain.class) {
            n = latencyCount;
            lat = Arrays.copyOf(latencies, n);
            store = Arrays.copyOf(storeDelays, n);
        }
        Arrays.sort(lat);
        Arrays.sort(store);
        System.out.printf(java.util.Locale.ROOT,
            "RESULT {\"client\":\"%s\",\"count\":%d,\"elapsed_s\":%.6f,\"startup_s\":%.6f,\"timeout\":%s,"
                + "\"latency_samples\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,"
                + "\"store_delay_samples\":%d,\"store_delay_p50_ms\":%.3f,\"store_delay_p99_ms\":%.3f,"
                + "\"store_delay_max_ms\":%.3f}%n",
            pop ? "java-pop-push" : "java-push", c, elapsed, startup, !finished, n, percentile(lat, n, 0.50), percentile(lat, n, 0.99),
            percentile(lat, n, 0.999), percentile(lat, n, 1.0), n, percentile(store, n, 0.50), percentile(store, n, 0.99),
            percentile(store, n, 1.0));
        System.out.flush();
        consumer.shutdown();
        System.exit(0);
    }
}
