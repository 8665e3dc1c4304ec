package rmqgrpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The Java side of bench/run.sh's gRPC scenario: the official RocketMQ 5.x gRPC client
 * ({@code rocketmq-client-java}) against the proxy, measured as rmq-bench measures rmq.
 *
 * <pre>
 * java -cp ... rmqgrpc.GrpcBench produce-sync  --endpoint E --topic T --count N [--size 1024] [--threads 64]
 * java -cp ... rmqgrpc.GrpcBench produce-async --endpoint E --topic T --count N [--size 1024] [--inflight 1000]
 * java -cp ... rmqgrpc.GrpcBench drain-simple  --endpoint E --topic T --group G --expect N [--threads 20] [--batch 32]
 * java -cp ... rmqgrpc.GrpcBench drain-push    --endpoint E --topic T --group G --expect N [--threads 20]
 *      (every mode also takes [--timeout-s 600])
 * </pre>
 *
 * <ul>
 * <li>produce-sync: {@code threads} threads each send their share with {@code Producer.send} and
 * wait for every answer. produce-async: one loop hands every message to {@code Producer.sendAsync},
 * at most {@code inflight} pending. Both print {@code RESULT {json}} with msgs_per_s = successes /
 * (first send .. last answer), client {@code java-grpc}.</li>
 * <li>drain-simple: a {@code SimpleConsumer} (long polling 5 s, the proxy's minimum by default);
 * {@code threads} threads each receive up to {@code batch} messages (invisible 60 s) and ack them
 * ({@code ackAsync}, all acks of a batch awaited before the next receive; this client has no batch
 * ack). drain-push: a
 * {@code PushConsumer} with {@code threads} consumption threads and a no-op listener. Both print
 * {@code READY} once built and {@code RESULT {json}} (count, elapsed_s = first .. last receive,
 * startup_s, timeout) when {@code expect} messages came, clients {@code java-grpc-simple} and
 * {@code java-grpc-push}.</li>
 * </ul>
 * Bodies are {@code size} bytes of 'a'..'z' as rmq-bench's; no compression.
 */
public final class GrpcBench {
    private static final Object TIMES_LOCK = new Object();
    private static long firstNanos = 0;
    private static long lastNanos = 0;

    private GrpcBench() {
    }

    /** The command line: a mode, then {@code --flag value} pairs. */
    private static final class Args {
        String mode;
        String endpoint;
        String topic;
        String group;
        long count;
        long expect;
        int size = 1024;
        int threads = -1;
        int inflight = 1_000;
        int batch = 32;
        long timeoutS = 600;
    }

    private static Args parse(String[] argv) {
        if (argv.length == 0) {
            usage("a mode is required");
        }
        Args a = new Args();
        a.mode = argv[0];
        for (int i = 1; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                usage(argv[i] + " needs a value");
            }
            String v = argv[i + 1];
            switch (argv[i]) {
                case "--endpoint": a.endpoint = v; break;
                case "--topic": a.topic = v; break;
                case "--group": a.group = v; break;
                case "--count": a.count = Long.parseLong(v); break;
                case "--expect": a.expect = Long.parseLong(v); break;
                case "--size": a.size = Integer.parseInt(v); break;
                case "--threads": a.threads = Integer.parseInt(v); break;
                case "--inflight": a.inflight = Integer.parseInt(v); break;
                case "--batch": a.batch = Integer.parseInt(v); break;
                case "--timeout-s": a.timeoutS = Long.parseLong(v); break;
                default: usage("unknown flag " + argv[i]);
            }
        }
        if (a.endpoint == null || a.topic == null) {
            usage("--endpoint and --topic are required");
        }
        return a;
    }

    private static void usage(String why) {
        System.err.println("GrpcBench: " + why + "; modes: produce-sync|produce-async --endpoint E --topic T --count N"
            + " [--size S] [--threads T] [--inflight I], drain-simple|drain-push --endpoint E --topic T --group G"
            + " --expect N [--threads T] [--batch B]");
        System.exit(2);
    }

    private static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    private static byte[] body(int size) {
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + (i + i / 26) % 26);
        }
        return body;
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] argv) throws Exception {
        Args a = parse(argv);
        switch (a.mode) {
            case "produce-sync":
            case "produce-async":
                produce(a);
                break;
            case "drain-simple":
                drainSimple(a);
                break;
            case "drain-push":
                drainPush(a);
                break;
            default:
                usage("unknown mode " + a.mode);
        }
        System.exit(0);
    }

    private static void produce(Args a) throws Exception {
        if (a.count <= 0) {
            usage("--count must be positive");
        }
        boolean sync = a.mode.equals("produce-sync");
        int threads = a.threads > 0 ? a.threads : 64;
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(config(a.endpoint))
            .setTopics(a.topic)
            .build();
        byte[] body = body(a.size);
        AtomicLong ok = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        long started = System.nanoTime();
        if (sync) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            for (int i = 0; i < threads; i++) {
                final long share = a.count / threads + (i < a.count % threads ? 1 : 0);
                pool.execute(() -> {
                    for (long n = 0; n < share; n++) {
                        try {
                            producer.send(provider.newMessageBuilder().setTopic(a.topic).setBody(body).build());
                            ok.incrementAndGet();
                        } catch (Exception e) {
                            failed.incrementAndGet();
                        }
                    }
                });
            }
            pool.shutdown();
            pool.awaitTermination(a.timeoutS, TimeUnit.SECONDS);
        } else {
            Semaphore permits = new Semaphore(a.inflight);
            for (long n = 0; n < a.count; n++) {
                permits.acquire();
                Message m = provider.newMessageBuilder().setTopic(a.topic).setBody(body).build();
                producer.sendAsync(m).whenComplete((receipt, error) -> {
                    if (error == null) {
                        ok.incrementAndGet();
                    } else {
                        failed.incrementAndGet();
                    }
                    permits.release();
                });
            }
            // Every send handed over: wait for the last answers.
            permits.tryAcquire(a.inflight, a.timeoutS, TimeUnit.SECONDS);
        }
        double elapsed = (System.nanoTime() - started) / 1e9;
        long okCount = ok.get();
        double rate = elapsed > 0 ? okCount / elapsed : 0;
        say(String.format(Locale.ROOT,
            "RESULT {\"client\":\"java-grpc\",\"mode\":\"%s\",\"count\":%d,\"failed\":%d,\"elapsed_s\":%.6f,"
                + "\"msgs_per_s\":%.1f}",
            sync ? "sync" : "async", okCount, failed.get(), elapsed, rate));
        closeBounded(producer);
    }

    /** Counts {@code n} received messages; true when this reached {@code expect}. */
    private static boolean received(AtomicLong count, long n, long expect) {
        long now = System.nanoTime();
        synchronized (TIMES_LOCK) {
            if (firstNanos == 0) {
                firstNanos = now;
            }
            lastNanos = now;
        }
        long after = count.addAndGet(n);
        return after >= expect && after - n < expect;
    }

    private static void drainResult(String client, long count, long started, boolean finished) {
        long first;
        long last;
        synchronized (TIMES_LOCK) {
            first = firstNanos;
            last = lastNanos;
        }
        double elapsed = first == 0 ? 0.0 : (last - first) / 1e9;
        double startup = first == 0 ? 0.0 : (first - started) / 1e9;
        say(String.format(Locale.ROOT,
            "RESULT {\"client\":\"%s\",\"count\":%d,\"elapsed_s\":%.6f,\"startup_s\":%.6f,\"timeout\":%s}",
            client, count, elapsed, startup, !finished));
    }

    private static void drainSimple(Args a) throws Exception {
        if (a.group == null || a.expect <= 0) {
            usage("drain-simple: --group and a positive --expect are required");
        }
        int threads = a.threads > 0 ? a.threads : 20;
        int batch = Math.max(1, Math.min(32, a.batch));
        AtomicLong count = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        AtomicBoolean stop = new AtomicBoolean();
        long started = System.nanoTime();
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(config(a.endpoint))
            .setConsumerGroup(a.group)
            .setSubscriptionExpressions(Collections.singletonMap(a.topic,
                new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(5))
            .build();
        say("READY");
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        List<MessageView> views = consumer.receive(batch, Duration.ofSeconds(60));
                        if (views.isEmpty()) {
                            continue;
                        }
                        List<CompletableFuture<Void>> acks = new ArrayList<>(views.size());
                        for (MessageView v : views) {
                            acks.add(consumer.ackAsync(v));
                        }
                        CompletableFuture.allOf(acks.toArray(new CompletableFuture[0])).join();
                        if (received(count, views.size(), a.expect)) {
                            done.countDown();
                        }
                    } catch (Exception e) {
                        if (!stop.get()) {
                            System.err.println("GrpcBench drain-simple: " + e);
                        }
                    }
                }
            }, "receive-" + i);
            t.setDaemon(true);
            t.start();
            workers.add(t);
        }
        boolean finished = done.await(a.timeoutS, TimeUnit.SECONDS);
        stop.set(true);
        drainResult("java-grpc-simple", count.get(), started, finished);
        closeBounded(consumer);
    }

    private static void drainPush(Args a) throws Exception {
        if (a.group == null || a.expect <= 0) {
            usage("drain-push: --group and a positive --expect are required");
        }
        int threads = a.threads > 0 ? a.threads : 20;
        AtomicLong count = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        long started = System.nanoTime();
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        PushConsumer consumer = provider.newPushConsumerBuilder()
            .setClientConfiguration(config(a.endpoint))
            .setConsumerGroup(a.group)
            .setSubscriptionExpressions(Collections.singletonMap(a.topic,
                new FilterExpression("*", FilterExpressionType.TAG)))
            .setConsumptionThreadCount(threads)
            .setMessageListener(view -> {
                if (received(count, 1, a.expect)) {
                    done.countDown();
                }
                return ConsumeResult.SUCCESS;
            })
            .build();
        say("READY");
        boolean finished = done.await(a.timeoutS, TimeUnit.SECONDS);
        drainResult("java-grpc-push", count.get(), started, finished);
        closeBounded(consumer);
    }

    /** Closes {@code c}, waiting at most 5 s (the process exits right after). */
    private static void closeBounded(java.io.Closeable c) throws InterruptedException {
        Thread closer = new Thread(() -> {
            try {
                c.close();
            } catch (Exception e) {
                System.err.println("GrpcBench: close: " + e);
            }
        }, "close");
        closer.setDaemon(true);
        closer.start();
        closer.join(5_000);
    }
}
