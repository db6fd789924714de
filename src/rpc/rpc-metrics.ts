import type { Metrics } from "../metrics/metrics.ts";

/** Distinct method labels kept before the rest count as "other": a client may send any name. */
const MAX_METHOD_LABELS = 200;
const METHOD_NAME = /^[A-Z][A-Za-z0-9]{0,40}\.[A-Z][A-Za-z0-9]{0,60}$/;

/**
 * The RPC port's counters, in /v1/metrics: Nomad's own (nomad.rpc.request,
 * nomad.rpc.request_error, nomad.streaming_rpc.*) and, per method,
 * chronomad.rpc.calls and chronomad.rpc.unknown_method, so a method a
 * client calls that chronomad does not serve shows up by name.
 */
export class RpcMetrics {
  private readonly labels = new Set<string>();

  constructor(private readonly metrics: Metrics) {}

  served(method: string, failed: boolean): void {
    this.metrics.incr("nomad.rpc.request");
    if (failed) this.metrics.incr("nomad.rpc.request_error");
    this.metrics.incr("chronomad.rpc.calls", 1, { method: this.label(method) }, "RPC calls by method");
  }

  unknown(method: string): void {
    this.metrics.incr("nomad.rpc.request");
    this.metrics.incr("nomad.rpc.request_error");
    this.metrics.incr(
      "chronomad.rpc.unknown_method",
      1,
      { method: this.label(method) },
      "RPC calls to methods chronomad does not serve",
    );
  }

  streaming(method: string, served: boolean): void {
    this.metrics.incr(served ? "nomad.streaming_rpc.request" : "nomad.streaming_rpc.request_error");
    if (!served) {
      this.metrics.incr(
        "chronomad.rpc.unknown_method",
        1,
        { method: this.label(method) },
        "RPC calls to methods chronomad does not serve",
      );
    }
  }

  connection(protocol: string): void {
    this.metrics.incr(
      "chronomad.rpc.connections",
      1,
      { protocol },
      "RPC connections accepted, by first byte",
    );
  }

  private label(method: string): string {
    if (!METHOD_NAME.test(method)) return "invalid";
    if (this.labels.has(method)) return method;
    if (this.labels.size >= MAX_METHOD_LABELS) return "other";
    this.labels.add(method);
    return method;
  }
}
