import java.util.Collection;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;

/**
 * Readiness probe for scripts/kafka.sh: an open port is not a serving broker,
 * so this sends a real metadata request and succeeds only once the broker
 * lists itself and a controller. Exit 0 = serving, 1 = not (yet).
 *
 * Usage: KafkaReady host:port timeoutSeconds
 */
public final class KafkaReady {
  public static void main(String[] args) throws InterruptedException {
    String bootstrap = args[0];
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
    props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, "chronomad-kafka-ready");
    try (Admin admin = Admin.create(props)) {
      while (System.nanoTime() < deadline) {
        try {
          DescribeClusterResult cluster = admin.describeCluster();
          Collection<Node> nodes = cluster.nodes().get(5, TimeUnit.SECONDS);
          Node controller = cluster.controller().get(5, TimeUnit.SECONDS);
          if (!nodes.isEmpty() && controller != null && !controller.isEmpty()) {
            System.out.println("ready: " + nodes.size() + " broker(s), controller " + controller.id());
            System.exit(0);
          }
        } catch (Exception e) {
          System.out.println("not ready: " + e);
        }
        Thread.sleep(300);
      }
    }
    System.exit(1);
  }
}
