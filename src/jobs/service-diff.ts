import {
  deepEqual,
  field,
  flatten,
  type GoValue,
  goDuration,
  list,
  map,
  num,
  STRING,
  slice,
  str,
  strings,
  zeroOf,
} from "./go-values.ts";
import {
  addObject,
  append,
  configDiff,
  type Flat,
  fieldDiffs,
  keyedDiffs,
  mapDiff,
  nonNull,
  type ObjectDiff,
  objectDiff,
  primitiveObjectDiff,
  sides,
  sortObjects,
  stringSetDiff,
} from "./job-diff-model.ts";
import {
  CHECK_RESTART,
  CONSUL_CONNECT,
  CONSUL_GATEWAY,
  CONSUL_GATEWAY_PROXY,
  CONSUL_GATEWAY_TLS,
  CONSUL_INGRESS,
  CONSUL_INGRESS_LISTENER,
  CONSUL_INGRESS_SERVICE,
  CONSUL_LINKED_SERVICE,
  CONSUL_MESH_GATEWAY,
  CONSUL_PROXY,
  CONSUL_SIDECAR_SERVICE,
  CONSUL_TERMINATING,
  CONSUL_UPSTREAM,
  LOG_CONFIG,
  SERVICE,
  SERVICE_CHECK,
  SIDECAR_TASK,
} from "./job-diff-types.ts";
import { resourcesDiff } from "./resources-diff.ts";

/**
 * Nomad's diff of services and what hangs off them (checks, Consul
 * Connect, gateways), ported from nomad/structs/diff.go v1.6.1. Each
 * function keeps Go's shape: which side is "nil", which fields are
 * contextual, which lists are sets and by what key.
 */

function serviceDiff(oldS: GoValue, newS: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldS, newS, SERVICE);
  if (!s) return null;
  const diff = objectDiff(s.type, "Service", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(
    diff,
    stringSetDiff(strings(s.old, "CanaryTags"), strings(s.new, "CanaryTags"), "CanaryTags", contextual),
  );
  addObject(diff, stringSetDiff(strings(s.old, "Tags"), strings(s.new, "Tags"), "Tags", contextual));
  diff.Objects = append(
    diff.Objects,
    ...(serviceCheckDiffs(list(s.old, "Checks"), list(s.new, "Checks"), contextual) ?? []),
  );
  addObject(diff, connectDiffs(field(s.old, "Connect"), field(s.new, "Connect"), contextual));
  return diff;
}

/**
 * serviceDiffs: services have no identity, so each old service is matched
 * with the best-scoring unmatched new one (same name 3, same port label 2,
 * same position 1; more than 2 to match), as Nomad's findServiceMatch.
 */
export function serviceDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  contextual: boolean,
): ObjectDiff[] | null {
  if (oldList.length === 1 && newList.length === 1) {
    const d = serviceDiff(oldList[0]!, newList[0]!, contextual);
    return d ? [d] : null;
  }
  const newMatches = newList.map(() => -1);
  let diffs: ObjectDiff[] | null = null;
  oldList.forEach((oldService, oldIndex) => {
    const newIndex = findServiceMatch(oldService, oldIndex, newList, newMatches);
    if (newIndex < 0) {
      diffs = append(diffs, ...nonNull(serviceDiff(oldService, null, contextual)));
      return;
    }
    newMatches[newIndex] = oldIndex;
    const d = serviceDiff(oldService, newList[newIndex]!, contextual);
    if (d) diffs = append(diffs, d);
  });
  newMatches.forEach((m, i) => {
    if (m === -1) diffs = append(diffs, ...nonNull(serviceDiff(null, newList[i]!, contextual)));
  });
  sortObjects(diffs);
  return diffs;
}

function findServiceMatch(
  service: GoValue,
  serviceIndex: number,
  services: readonly GoValue[],
  matches: readonly number[],
): number {
  const minScoreThreshold = 2;
  let highestScore = 0;
  let indexMatch = -1;
  services.forEach((s, i) => {
    if (matches[i]! >= 0) return;
    let score = 0;
    if (i === serviceIndex) score += 1;
    if (str(service, "PortLabel") === str(s, "PortLabel")) score += 2;
    if (str(service, "Name") === str(s, "Name")) score += 3;
    if (score > minScoreThreshold && score > highestScore) {
      highestScore = score;
      indexMatch = i;
    }
  });
  return indexMatch;
}

function serviceCheckDiffs(
  oldList: readonly GoValue[],
  newList: readonly GoValue[],
  contextual: boolean,
): ObjectDiff[] | null {
  return keyedDiffs(
    oldList,
    newList,
    (c) => str(c, "Name"),
    (o, n) => serviceCheckDiff(o, n, contextual),
  );
}

function serviceCheckDiff(oldC: GoValue, newC: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldC, newC, SERVICE_CHECK);
  if (!s) return null;
  const diff = objectDiff(s.type, "Check", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(diff, checkHeaderDiff(field(s.old, "Header"), field(s.new, "Header"), contextual));
  addObject(diff, checkRestartDiff(field(s.old, "CheckRestart"), field(s.new, "CheckRestart"), contextual));
  return diff;
}

function checkHeaderDiff(oldH: GoValue, newH: GoValue, contextual: boolean): ObjectDiff | null {
  return mapDiff(oldH, newH, map(slice(STRING)), "Header", contextual);
}

function checkRestartDiff(oldR: GoValue, newR: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldR, newR, CHECK_RESTART);
  return s ? objectDiff(s.type, "CheckRestart", fieldDiffs(s.oldFlat, s.newFlat, contextual)) : null;
}

function connectDiffs(oldC: GoValue, newC: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldC, newC, CONSUL_CONNECT);
  if (!s) return null;
  const diff = objectDiff(s.type, "ConsulConnect", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(
    diff,
    sidecarServiceDiff(field(s.old, "SidecarService"), field(s.new, "SidecarService"), contextual),
  );
  addObject(diff, sidecarTaskDiff(field(s.old, "SidecarTask"), field(s.new, "SidecarTask"), contextual));
  addObject(diff, gatewayDiff(field(s.old, "Gateway"), field(s.new, "Gateway"), contextual));
  return diff;
}

function gatewayDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(prev, next, CONSUL_GATEWAY);
  if (!s) return null;
  const diff = objectDiff(s.type, "Gateway", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(diff, gatewayProxyDiff(field(s.old, "Proxy"), field(s.new, "Proxy"), contextual));
  addObject(diff, gatewayIngressDiff(field(s.old, "Ingress"), field(s.new, "Ingress"), contextual));
  addObject(
    diff,
    gatewayTerminatingDiff(field(s.old, "Terminating"), field(s.new, "Terminating"), contextual),
  );
  // A mesh gateway has no fields: only whether it came or went.
  const prevMesh = field(s.old, "Mesh");
  const nextMesh = field(s.new, "Mesh");
  if (!deepEqual(prevMesh, nextMesh))
    addObject(
      diff,
      objectDiff(prevMesh === null ? "Added" : nextMesh === null ? "Deleted" : "Edited", "Mesh", null),
    );
  return diff;
}

function gatewayIngressDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(prev, next, CONSUL_INGRESS);
  if (!s) return null;
  const diff = objectDiff(s.type, "Ingress", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(diff, gatewayTLSDiff(field(s.old, "TLS"), field(s.new, "TLS"), contextual));
  diff.Objects = append(
    diff.Objects,
    ...(keyedDiffs(
      list(s.old, "Listeners"),
      list(s.new, "Listeners"),
      // Listeners have no name: protocol and port identify one.
      (l) => `${str(l, "Protocol")}/${num(l, "Port")}`,
      (o, n) => ingressListenerDiff(o, n, contextual),
    ) ?? []),
  );
  return diff;
}

function gatewayTerminatingDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(prev, next, CONSUL_TERMINATING);
  if (!s) return null;
  const diff = objectDiff(s.type, "Terminating", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  diff.Objects = append(
    diff.Objects,
    ...(keyedDiffs(
      list(s.old, "Services"),
      list(s.new, "Services"),
      (l) => str(l, "Name"),
      (o, n) => {
        const ls = sides(o, n, CONSUL_LINKED_SERVICE);
        return ls ? objectDiff(ls.type, "Service", fieldDiffs(ls.oldFlat, ls.newFlat, contextual)) : null;
      },
    ) ?? []),
  );
  return diff;
}

function gatewayTLSDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(prev, next, CONSUL_GATEWAY_TLS);
  if (!s) return null;
  const diff = objectDiff(s.type, "TLS", null);
  addObject(
    diff,
    stringSetDiff(strings(s.old, "CipherSuites"), strings(s.new, "CipherSuites"), "CipherSuites", contextual),
  );
  diff.Fields = fieldDiffs(s.oldFlat, s.newFlat, contextual);
  return diff;
}

function ingressListenerDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(prev, next, CONSUL_INGRESS_LISTENER);
  if (!s) return null;
  const diff = objectDiff(s.type, "Listener", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  diff.Objects = append(
    diff.Objects,
    ...(keyedDiffs(
      list(s.old, "Services"),
      list(s.new, "Services"),
      (l) => str(l, "Name"),
      (o, n) => {
        const is = sides(o, n, CONSUL_INGRESS_SERVICE);
        if (!is) return null;
        const d = objectDiff(is.type, "ConsulIngressService", fieldDiffs(is.oldFlat, is.newFlat, contextual));
        addObject(d, stringSetDiff(strings(is.old, "Hosts"), strings(is.new, "Hosts"), "Hosts", contextual));
        return d;
      },
    ) ?? []),
  );
  return diff;
}

function gatewayProxyDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(prev, next, CONSUL_GATEWAY_PROXY);
  if (!s) return null;
  // ConnectTimeout is a *time.Duration, which the primitive walk skips:
  // Nomad adds it by hand, as Go prints a duration ("5s"), and only when
  // both sides exist.
  if (s.oldFlat && s.newFlat) {
    const timeout = (p: GoValue) => {
      const t = field(p, "ConnectTimeout");
      return typeof t === "number" ? goDuration(t) : "";
    };
    s.oldFlat.ConnectTimeout = timeout(s.old);
    s.newFlat.ConnectTimeout = timeout(s.new);
  }
  const diff = objectDiff(s.type, "Proxy", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(
    diff,
    bindAddressesDiff(
      field(s.old, "EnvoyGatewayBindAddresses"),
      field(s.new, "EnvoyGatewayBindAddresses"),
      contextual,
    ),
  );
  addObject(diff, configDiff(field(s.old, "Config"), field(s.new, "Config"), contextual));
  return diff;
}

/** The bind addresses as Go's net.JoinHostPort prints them ("[::1]:80" for IPv6). */
function bindAddressesDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  if (deepEqual(prev, next)) return null;
  const asText = (m: GoValue): GoValue => {
    if (!m || typeof m !== "object" || Array.isArray(m)) return {};
    return Object.fromEntries(
      Object.entries(m).map(([k, v]) => {
        const host = str(v, "Address");
        return [k, `${host.includes(":") ? `[${host}]` : host}:${num(v, "Port")}`];
      }),
    );
  };
  const size = (m: GoValue) => (m && typeof m === "object" ? Object.keys(m).length : 0);
  const type = size(prev) === 0 ? "Added" : size(next) === 0 ? "Deleted" : "Edited";
  const flat = (m: GoValue): Flat => flatten(asText(m), map(STRING), null, false);
  return objectDiff(type, "EnvoyGatewayBindAddresses", fieldDiffs(flat(prev), flat(next), contextual));
}

function sidecarServiceDiff(oldS: GoValue, newS: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldS, newS, CONSUL_SIDECAR_SERVICE);
  if (!s) return null;
  const diff = objectDiff(s.type, "SidecarService", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  addObject(diff, consulProxyDiff(field(s.old, "Proxy"), field(s.new, "Proxy"), contextual));
  return diff;
}

function sidecarTaskDiff(oldT: GoValue, newT: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldT, newT, SIDECAR_TASK);
  if (!s) return null;
  // Nomad diffs a sidecar task's own fields without context.
  const diff = objectDiff(s.type, "SidecarTask", fieldDiffs(s.oldFlat, s.newFlat, false));
  addObject(diff, configDiff(field(s.old, "Config"), field(s.new, "Config"), contextual));
  addObject(diff, resourcesDiff(field(s.old, "Resources"), field(s.new, "Resources"), contextual));
  addObject(
    diff,
    primitiveObjectDiff(
      field(s.old, "LogConfig"),
      field(s.new, "LogConfig"),
      LOG_CONFIG,
      null,
      "LogConfig",
      contextual,
    ),
  );
  return diff;
}

function consulProxyDiff(oldP: GoValue, newP: GoValue, contextual: boolean): ObjectDiff | null {
  const s = sides(oldP, newP, CONSUL_PROXY);
  if (!s) return null;
  const diff = objectDiff(s.type, "ConsulProxy", fieldDiffs(s.oldFlat, s.newFlat, contextual));
  const zero = zeroOf(CONSUL_UPSTREAM);
  diff.Objects = append(
    diff.Objects,
    ...(keyedDiffs(
      list(s.old, "Upstreams"),
      list(s.new, "Upstreams"),
      (u) => `${str(u, "Datacenter")}/${str(u, "DestinationName")}`,
      (o, n) => upstreamDiff(o, n, contextual),
      // Upstreams are values, not pointers: a missing one is the zero upstream.
      zero,
    ) ?? []),
  );
  addObject(diff, configDiff(field(s.old, "Config"), field(s.new, "Config"), contextual));
  return diff;
}

function upstreamDiff(prev: GoValue, next: GoValue, contextual: boolean): ObjectDiff | null {
  if (deepEqual(prev, next)) return null;
  const zero = zeroOf(CONSUL_UPSTREAM);
  const flat = (u: GoValue) => flatten(u, CONSUL_UPSTREAM, null, true);
  let type: ObjectDiff["Type"] = "Edited";
  let oldFlat: Flat = flat(prev);
  let newFlat: Flat = flat(next);
  if (deepEqual(prev, zero)) {
    type = "Added";
    oldFlat = null;
  } else if (deepEqual(next, zero)) {
    type = "Deleted";
    newFlat = null;
  }
  const diff = objectDiff(type, "ConsulUpstreams", fieldDiffs(oldFlat, newFlat, contextual));
  addObject(
    diff,
    primitiveObjectDiff(
      field(prev, "MeshGateway"),
      field(next, "MeshGateway"),
      CONSUL_MESH_GATEWAY,
      null,
      "MeshGateway",
      contextual,
    ),
  );
  return diff;
}
