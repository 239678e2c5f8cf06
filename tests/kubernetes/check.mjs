// deploy/kubernetes/ checked offline, with no cluster: every object
// against the Kubernetes API's own models (the attribute type maps and
// required fields that @kubernetes/client-node generates from the
// Kubernetes OpenAPI spec), then against what codellm needs from its pod
// (codellm-handler(8), KUBERNETES). Used by test.mjs (TAP, make check);
// also a command: `node check.mjs [DIR]` prints each failure and exits 1
// if there is one.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import * as models from "@kubernetes/client-node/dist/gen/models/all.js";

const require = createRequire(import.meta.url);
const MODELS_DIR = path.join(
  path.dirname(require.resolve("@kubernetes/client-node/package.json")),
  "dist/gen/models",
);
export const CLIENT_VERSION = require("@kubernetes/client-node/package.json").version;
export const API_VERSION =
  /OpenAPI spec version: (\S+)/.exec(fs.readFileSync(path.join(MODELS_DIR, "V1Pod.js"), "utf8"))?.[1] ??
  "unknown";

// apiVersion/kind -> the model; only kinds this deployment may use
const KINDS = {
  "v1/Namespace": "V1Namespace",
  "v1/Secret": "V1Secret",
  "v1/Service": "V1Service",
  "v1/ConfigMap": "V1ConfigMap",
  "v1/ServiceAccount": "V1ServiceAccount",
  "apps/v1/Deployment": "V1Deployment",
  "autoscaling/v2/HorizontalPodAutoscaler": "V2HorizontalPodAutoscaler",
  "policy/v1/PodDisruptionBudget": "V1PodDisruptionBudget",
  "networking.k8s.io/v1/NetworkPolicy": "V1NetworkPolicy",
};
const KUSTOMIZATION_KEYS = new Set([
  "apiVersion", "kind", "namespace", "resources", "images", "labels", "commonAnnotations",
]);

// ---- reading ---------------------------------------------------------

// YAML 1.1, as Kubernetes reads it (sigs.k8s.io/yaml): 0440 is octal,
// yes/no/on/off are booleans. Duplicate keys are errors.
export function parseYaml(text, file) {
  const docs = [];
  const errors = [];
  for (const d of YAML.parseAllDocuments(text, { version: "1.1", uniqueKeys: true })) {
    for (const e of [...d.errors, ...d.warnings]) errors.push(`${file}: ${e.message.split("\n")[0]}`);
    if (d.errors.length) continue;
    const value = d.toJS({ maxAliasCount: 0 });
    if (value !== null && value !== undefined) docs.push(value);
  }
  return { docs, errors };
}

// Every *.yaml of DIR: [{file, index, obj}], the kustomization apart.
export function loadDir(dir) {
  const out = { dir, objects: [], kustomization: null, errors: [] };
  for (const file of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    const { docs, errors } = parseYaml(fs.readFileSync(path.join(dir, file), "utf8"), file);
    out.errors.push(...errors);
    if (/^kustomization\.ya?ml$/.test(file)) {
      out.kustomization = { file, obj: docs[0] ?? {} };
      continue;
    }
    docs.forEach((obj, index) => out.objects.push({ file, index, obj }));
  }
  return out;
}

// ---- the API's models ------------------------------------------------

const requiredCache = new Map();
// The generated declarations say which fields the spec requires:
// `'name': string;` against `'image'?: string;`.
function requiredFields(type) {
  if (!requiredCache.has(type)) {
    const file = path.join(MODELS_DIR, `${type}.d.ts`);
    const req = [];
    if (fs.existsSync(file))
      for (const m of fs.readFileSync(file, "utf8").matchAll(/^\s+'([^']+)'(\??):/gm))
        if (!m[2]) req.push(m[1]);
    requiredCache.set(type, req);
  }
  return requiredCache.get(type);
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const describe = (v) => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "object" ? "a map" : `${typeof v} ${JSON.stringify(v)}`);

// Checks VALUE against the model TYPE ("V1PodSpec", "Array<V1Container>",
// "{ [key: string]: string; }", "string", ...); errors as "path: what".
export function checkType(value, type, format, where, errors) {
  const bad = (what) => errors.push(`${where}: ${what}`);
  if (value === null || value === undefined) return bad("null (leave the field out instead)");
  let m;
  if ((m = /^Array<(.+)>$/.exec(type))) {
    if (!Array.isArray(value)) return bad(`must be a list, not ${describe(value)}`);
    value.forEach((v, i) => checkType(v, m[1], format, `${where}[${i}]`, errors));
    return;
  }
  if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
    if (!isObject(value)) return bad(`must be a map, not ${describe(value)}`);
    for (const [k, v] of Object.entries(value)) checkType(v, m[1], format, `${where}.${k}`, errors);
    return;
  }
  switch (type) {
    case "any":
    case "object":
      return;
    case "string":
      if (typeof value !== "string") return bad(`must be a string, not ${describe(value)} (quote it)`);
      if (format === "byte" && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) bad("must be base64");
      return;
    case "Date":
      if (typeof value !== "string" || Number.isNaN(Date.parse(value))) bad("must be an RFC 3339 time");
      return;
    case "boolean":
      if (typeof value !== "boolean") bad(`must be true or false, not ${describe(value)}`);
      return;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) return bad(`must be a number, not ${describe(value)}`);
      if ((format === "int32" || format === "int64") && !Number.isInteger(value)) bad("must be an integer");
      if (format === "int32" && (value < -(2 ** 31) || value >= 2 ** 31)) bad("out of int32 range");
      return;
    case "IntOrString":
      if (!(typeof value === "string" || Number.isInteger(value))) bad(`must be an integer or a string, not ${describe(value)}`);
      return;
  }
  const model = models[type];
  if (!model?.attributeTypeMap) return bad(`no model for type ${type}`);
  if (!isObject(value)) return bad(`must be a map (${type}), not ${describe(value)}`);
  const attrs = new Map(model.attributeTypeMap.map((a) => [a.baseName, a]));
  for (const [k, v] of Object.entries(value)) {
    const a = attrs.get(k);
    if (!a) bad(`unknown field "${k}" (${type} has ${[...attrs.keys()].join(", ")})`);
    else checkType(v, a.type, a.format, `${where}.${k}`, errors);
  }
  for (const r of requiredFields(type)) if (!(r in value)) bad(`missing required field "${r}" (${type})`);
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkLabels(labels, where, errors) {
  for (const [k, v] of Object.entries(labels ?? {})) {
    const [prefix, name] = k.includes("/") ? k.split("/", 2) : [null, k];
    if ((prefix !== null && (!DNS_SUBDOMAIN.test(prefix) || prefix.length > 253)) || !LABEL_NAME.test(name) || name.length > 63)
      errors.push(`${where}: invalid label key "${k}"`);
    if (typeof v !== "string" || !LABEL_VALUE.test(v) || v.length > 63) errors.push(`${where}: invalid value for label "${k}"`);
  }
}

// What the API server would refuse before any policy: the object's
// shape, its names, its labels.
export function checkSchema({ file, index, obj }) {
  const errors = [];
  const at = `${file}#${index}`;
  if (!isObject(obj)) return [`${at}: not a map`];
  const key = `${obj.apiVersion}/${obj.kind}`;
  const type = KINDS[key];
  if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string")
    return [`${at}: apiVersion and kind must be strings`];
  if (!type) return [`${at}: ${key} is not a kind this deployment uses (${Object.keys(KINDS).join(", ")})`];
  const name = obj.metadata?.name;
  if (typeof name !== "string") errors.push(`${at}: metadata.name is required`);
  else if (!(obj.kind === "Service" || obj.kind === "Namespace" ? DNS_LABEL : DNS_SUBDOMAIN).test(name) || name.length > 63)
    errors.push(`${at}: metadata.name "${name}" is not a valid ${obj.kind} name`);
  if ("status" in obj) errors.push(`${at}: status is the cluster's to write`);
  checkType(obj, type, "", `${obj.kind}/${name ?? "?"}`, errors);
  checkLabels(obj.metadata?.labels, `${at} metadata.labels`, errors);
  for (const c of podSpec(obj)?.containers ?? []) {
    if (typeof c.name === "string" && !DNS_LABEL.test(c.name)) errors.push(`${at}: container name "${c.name}" is not a DNS label`);
    if (!c.image) errors.push(`${at}: container ${c.name} needs an image`);
    for (const p of c.ports ?? [])
      if (p.name !== undefined && !(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) && /[a-z]/.test(p.name) && p.name.length <= 15))
        errors.push(`${at}: port name "${p.name}" is not an IANA service name`);
    for (const w of ["requests", "limits"])
      for (const [kind, q] of Object.entries(c.resources?.[w] ?? {}))
        if (quantity(q) === null) errors.push(`${at}: resources.${w}.${kind} "${q}" is not a quantity`);
  }
  if (obj.kind === "Deployment") checkLabels(obj.spec?.template?.metadata?.labels, `${at} template labels`, errors);
  return errors;
}

// ---- helpers for the contract -------------------------------------------

export function podSpec(obj) {
  return obj?.kind === "Deployment" ? obj.spec?.template?.spec : undefined;
}

// A Kubernetes quantity in bytes, or in cores for CPU ("500m").
export function quantity(q) {
  if (typeof q === "number") return q;
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(String(q));
  if (!m) return null;
  const f = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  return Number(m[1]) * (m[2] ? f[m[2]] : 1);
}

// codellm's own sizes: K, M, G, T are powers of 1024
function codellmSize(s) {
  const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/.exec(String(s));
  return m ? Number(m[1]) * 1024 ** " KMGT".indexOf(m[2] || " ") : null;
}

function matches(selector, labels) {
  const want = selector?.matchLabels ?? {};
  return Object.keys(want).length > 0 && Object.entries(want).every(([k, v]) => labels?.[k] === v);
}

// ---- the checks ----------------------------------------------------------

// Each check: [id, what it says, (set) => errors]. SET is loadDir's
// result. Every check runs; each error is one line.
export const CHECKS = [
  ["parse", "every file is valid YAML 1.1 without duplicate keys", (s) => s.errors],
  ["schema", "every object matches the Kubernetes API's models (kinds, fields, types, required fields, names)", (s) =>
    s.objects.flatMap(checkSchema)],
  ["kustomization", "kustomization.yaml applies exactly the manifests, and no example", (s) => {
    const e = [];
    const k = s.kustomization?.obj;
    if (!k) return ["kustomization.yaml is missing"];
    if (k.apiVersion !== "kustomize.config.k8s.io/v1beta1" || k.kind !== "Kustomization")
      e.push("kustomization.yaml: apiVersion/kind must be kustomize.config.k8s.io/v1beta1 Kustomization");
    for (const key of Object.keys(k)) if (!KUSTOMIZATION_KEYS.has(key)) e.push(`kustomization.yaml: unknown or unexpected field "${key}"`);
    const res = k.resources ?? [];
    if (!Array.isArray(res)) return [...e, "kustomization.yaml: resources must be a list"];
    const files = new Set(s.objects.map((o) => o.file));
    for (const r of res) {
      if (typeof r !== "string" || !fs.existsSync(path.join(s.dir, r))) e.push(`kustomization.yaml: resource ${r} does not exist`);
      if (/\.example\.ya?ml$/.test(r)) e.push(`kustomization.yaml: ${r} is an example and must not be applied`);
    }
    for (const f of files)
      if (!/\.example\.ya?ml$/.test(f) && !res.includes(f)) e.push(`${f} is neither listed in resources nor named *.example.yaml`);
    const ns = s.objects.find((o) => o.obj?.kind === "Namespace" && res.includes(o.file));
    if (typeof k.namespace !== "string" || ns?.obj?.metadata?.name !== k.namespace)
      e.push(`kustomization.yaml: namespace must name the Namespace it applies (${ns?.obj?.metadata?.name})`);
    for (const o of s.objects)
      if (o.obj?.metadata?.namespace !== undefined && o.obj.metadata.namespace !== k.namespace)
        e.push(`${o.file}: namespace ${o.obj.metadata.namespace} is not ${k.namespace}`);
    const images = new Set(s.objects.flatMap((o) => podSpec(o.obj)?.containers ?? []).map((c) => String(c.image).replace(/[:@].*$/, "")));
    for (const i of k.images ?? [])
      if (!isObject(i) || !images.has(i.name) || Object.keys(i).some((x) => !["name", "newName", "newTag", "digest"].includes(x)))
        e.push(`kustomization.yaml: images entry ${JSON.stringify(i)} names no container image of the Deployment`);
    return e;
  }],
  ["references", "selectors, ports and targets between the objects agree", (s) => {
    const e = [];
    const applied = s.objects.filter((o) => !/\.example\./.test(o.file)).map((o) => o.obj);
    const deploys = applied.filter((o) => o?.kind === "Deployment");
    if (deploys.length !== 1) return [`one Deployment expected, found ${deploys.length}`];
    const d = deploys[0];
    const labels = d.spec?.template?.metadata?.labels;
    const ports = (podSpec(d)?.containers ?? []).flatMap((c) => c.ports ?? []);
    const portOf = (p) => (typeof p === "number" ? ports.find((x) => x.containerPort === p) : ports.find((x) => x.name === p));
    if (!matches(d.spec?.selector, labels)) e.push("Deployment: spec.selector does not match the pod template's labels");
    for (const o of s.objects.map((x) => x.obj)) {
      const name = `${o?.kind}/${o?.metadata?.name}`;
      if (o?.kind === "Service") {
        if (!matches({ matchLabels: o.spec?.selector }, labels)) e.push(`${name}: selector does not select the Deployment's pods`);
        for (const p of o.spec?.ports ?? []) if (!portOf(p.targetPort ?? p.port)) e.push(`${name}: targetPort ${p.targetPort} is no container port`);
      }
      if (o?.kind === "PodDisruptionBudget" && !matches(o.spec?.selector, labels)) e.push(`${name}: selector does not select the Deployment's pods`);
      if (o?.kind === "NetworkPolicy") {
        if (!matches(o.spec?.podSelector, labels)) e.push(`${name}: podSelector does not select the Deployment's pods`);
        for (const r of o.spec?.ingress ?? []) for (const p of r.ports ?? []) if (!portOf(p.port)) e.push(`${name}: ingress port ${p.port} is no container port`);
      }
      if (o?.kind === "HorizontalPodAutoscaler") {
        const t = o.spec?.scaleTargetRef;
        if (t?.kind !== "Deployment" || t?.apiVersion !== "apps/v1" || t?.name !== d.metadata?.name) e.push(`${name}: scaleTargetRef is not the Deployment`);
        if ((o.spec?.minReplicas ?? 1) < 2) e.push(`${name}: minReplicas below 2 leaves no pod while one drains`);
        if (o.spec?.maxReplicas < (o.spec?.minReplicas ?? 1)) e.push(`${name}: maxReplicas below minReplicas`);
        for (const m of o.spec?.metrics ?? [])
          if (m.type === "Resource" && m.resource?.target?.type === "Utilization")
            for (const c of podSpec(d)?.containers ?? [])
              if (!c.resources?.requests?.[m.resource.name]) e.push(`${name}: utilization of ${m.resource.name} needs a ${m.resource.name} request`);
      }
    }
    for (const probe of ["readinessProbe", "livenessProbe"])
      for (const c of podSpec(d)?.containers ?? []) {
        const p = c[probe]?.httpGet?.port ?? c[probe]?.tcpSocket?.port;
        if (p !== undefined && !portOf(p)) e.push(`Deployment: ${probe} port ${p} is no container port`);
      }
    return e;
  }],
  ["secret", "no Secret is applied, and the example holds a placeholder, never a key", (s) =>
    s.objects.filter((o) => o.obj?.kind === "Secret").flatMap(({ file, obj }) => {
      const e = [];
      if (!/\.example\.ya?ml$/.test(file)) e.push(`${file}: a Secret must not be applied from the repository (create it with kubectl create secret)`);
      for (const [k, v] of Object.entries({ ...obj.stringData }))
        if (!/^REPLACE-/.test(String(v))) e.push(`${file}: stringData.${k} must be a REPLACE-... placeholder`);
      if (obj.data && Object.keys(obj.data).length) e.push(`${file}: data must be empty (placeholders go in stringData)`);
      return e;
    })],
  ["namespace", "the Namespace says which Pod Security level it enforces", (s) =>
    s.objects.filter((o) => o.obj?.kind === "Namespace").flatMap(({ file, obj }) => {
      const l = obj.metadata?.labels ?? {};
      const lv = ["privileged", "baseline", "restricted"];
      return ["enforce", "warn", "audit"].filter((m) => !lv.includes(l[`pod-security.kubernetes.io/${m}`]))
        .map((m) => `${file}: label pod-security.kubernetes.io/${m} must be one of ${lv.join(", ")}`);
    })],
  ["service", "the Service is a ClusterIP on 8089", (s) =>
    s.objects.filter((o) => o.obj?.kind === "Service").flatMap(({ file, obj }) => {
      const e = [];
      if ((obj.spec?.type ?? "ClusterIP") !== "ClusterIP") e.push(`${file}: type ${obj.spec.type}: keep it inside the cluster, put an ingress in front`);
      if (!(obj.spec?.ports ?? []).some((p) => p.port === 8089)) e.push(`${file}: no port 8089`);
      return e;
    })],
  ...deploymentChecks(),
];

// The codellm contract on the Deployment's pod. Each check gets the pod
// spec, its one container and the container's env as a map.
function deploymentChecks() {
  const on = (fn) => (s) => {
    const d = s.objects.find((o) => o.obj?.kind === "Deployment")?.obj;
    const pod = podSpec(d);
    if (!pod) return ["no Deployment with a pod template"];
    const c = pod.containers?.[0];
    if (pod.containers?.length !== 1 || !isObject(c)) return ["the pod must have exactly one container"];
    const env = Object.fromEntries((c.env ?? []).map((v) => [v.name, v]));
    return fn({ d, pod, c, env, val: (n) => env[n]?.value });
  };
  const eff = (pod, c, k) => c.securityContext?.[k] ?? pod.securityContext?.[k];
  return [
    ["pod.hostUsers", "the pod has its own user namespace (hostUsers: false)", on(({ pod }) =>
      pod.hostUsers === false ? [] : ["spec.hostUsers must be false: without a user namespace Kubernetes refuses procMount: Unmasked"])],
    ["pod.isolation", "no host namespaces, host paths, privilege or service account token", on(({ pod }) => {
      const e = [];
      for (const k of ["hostNetwork", "hostPID", "hostIPC"]) if (pod[k]) e.push(`spec.${k} must not be set`);
      for (const v of pod.volumes ?? []) if (v.hostPath) e.push(`volume ${v.name}: no hostPath`);
      if (pod.automountServiceAccountToken !== false) e.push("automountServiceAccountToken must be false: codellm needs no API access");
      return e;
    })],
    ["pod.user", "non-root uid and gid, and no supplementary group but its own", on(({ pod, c }) => {
      const e = [];
      if (eff(pod, c, "runAsNonRoot") !== true) e.push("runAsNonRoot must be true");
      const uid = eff(pod, c, "runAsUser"), gid = eff(pod, c, "runAsGroup");
      if (!(uid > 0)) e.push("runAsUser must be set and not 0 (the image's user is 10001)");
      if (!(gid > 0)) e.push("runAsGroup must be set and not 0");
      const fsGroup = pod.securityContext?.fsGroup;
      if (fsGroup !== gid) e.push("fsGroup must equal runAsGroup: another group would be a supplementary group, and the sandbox's groups layer refuses every run then");
      if ((pod.securityContext?.supplementalGroups ?? []).some((g) => g !== gid)) e.push("supplementalGroups must be empty (the groups layer)");
      return e;
    })],
    ["container.securityContext", "no privilege escalation, every capability dropped, unmasked /proc, read-only root", on(({ c }) => {
      const e = [];
      const sc = c.securityContext ?? {};
      if (sc.allowPrivilegeEscalation !== false) e.push("securityContext.allowPrivilegeEscalation must be false");
      if (sc.privileged) e.push("securityContext.privileged must not be true");
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) e.push('securityContext.capabilities.drop must hold "ALL"');
      if ((sc.capabilities?.add ?? []).length) e.push("securityContext.capabilities.add must be empty: the handler needs no capability");
      if (sc.procMount !== "Unmasked") e.push("securityContext.procMount must be Unmasked: with the runtime's masked /proc the proc layer fails and /healthz answers 503");
      if (sc.readOnlyRootFilesystem !== true) e.push("securityContext.readOnlyRootFilesystem must be true");
      return e;
    })],
    ["seccomp", "the seccomp profile is deploy/seccomp/codellm.json as a Localhost profile", on(({ pod, c }) => {
      const p = c.securityContext?.seccompProfile ?? pod.securityContext?.seccompProfile;
      return p?.type === "Localhost" && p?.localhostProfile === "profiles/codellm.json" ? [] :
        [`seccompProfile must be {type: Localhost, localhostProfile: profiles/codellm.json}, not ${JSON.stringify(p)}: the runtime's default refuses the namespaces and mounts the sandbox makes`];
    })],
    ["probes", "readiness on /healthz (the real sandbox check), liveness without it", on(({ c }) => {
      const e = [];
      const r = c.readinessProbe?.httpGet;
      if (r?.path !== "/healthz") e.push("readinessProbe must be an httpGet of /healthz");
      if (!c.livenessProbe) e.push("a livenessProbe is needed");
      else if (c.livenessProbe.httpGet?.path?.startsWith("/health"))
        e.push("livenessProbe must not use /healthz: a missing sandbox layer is the node's, and restarts would not bring it back");
      return e;
    })],
    ["resources", "requests and limits for CPU and memory, the memory limit fitting every slot", on(({ c, val }) => {
      const e = [];
      const r = c.resources ?? {};
      for (const k of ["cpu", "memory"])
        for (const w of ["requests", "limits"]) if (r[w]?.[k] === undefined) e.push(`resources.${w}.${k} must be set`);
      for (const k of ["cpu", "memory"])
        if (quantity(r.requests?.[k]) > quantity(r.limits?.[k])) e.push(`resources.requests.${k} is above the limit`);
      const slots = Number(val("CODELLM_MAX_CONCURRENT") ?? 4);
      const perRun = (codellmSize(val("CODELLM_MEMORY_MAX") ?? "2G") ?? NaN) + (codellmSize(val("CODELLM_WORKDIR_BYTES") ?? "256M") ?? NaN);
      const limit = quantity(r.limits?.memory);
      if (!(limit >= slots * perRun))
        e.push(`resources.limits.memory ${r.limits?.memory} is below CODELLM_MAX_CONCURRENT x (memory-max + workdir-bytes) = ${Math.ceil((slots * perRun) / 2 ** 20)}Mi: one run over it ends every run of the pod`);
      return e;
    })],
    ["api-key", "the key is a Secret mounted read-only as a file, not readable by others, never in the environment", on(({ pod, c, env, val }) => {
      const e = [];
      const file = val("CODELLM_API_KEY_FILE");
      if (!file) return ["CODELLM_API_KEY_FILE must name the key file"];
      const mount = (c.volumeMounts ?? []).find((m) => path.posix.dirname(file) === m.mountPath);
      const vol = (pod.volumes ?? []).find((v) => v.name === mount?.name);
      if (!mount || !vol?.secret) return [`${file} must be in a mounted Secret volume`];
      if (mount.readOnly !== true) e.push(`volume mount ${mount.mountPath} must be readOnly`);
      if (mount.subPath !== undefined) e.push("no subPath: a subPath mount never sees the Secret updated");
      const item = (vol.secret.items ?? []).find((i) => i.path === path.posix.basename(file));
      if (vol.secret.items && !item) e.push(`the Secret volume has no item ${path.posix.basename(file)}`);
      const mode = item?.mode ?? vol.secret.defaultMode ?? 0o644;
      if (mode & 0o337) e.push(`the key file's mode ${mode.toString(8)} must grant read to owner and group only (0440 or 0400)`);
      if (!(pod.securityContext?.fsGroup > 0)) e.push("fsGroup must be set, or uid 10001 cannot read the root-owned key file");
      if (vol.secret.optional === true) e.push("the key's Secret must not be optional");
      for (const v of Object.values(env)) if (v.valueFrom?.secretKeyRef) e.push(`env ${v.name}: no Secret in the environment`);
      if ((c.envFrom ?? []).length) e.push("no envFrom: only the listed CODELLM_* reach the handler");
      if ("CODELLM_NO_AUTH" in env) e.push("CODELLM_NO_AUTH must not be set: code execution is never unauthenticated by accident");
      return e;
    })],
    ["runtime-dir", "CODELLM_RUNTIME_DIR is an emptyDir in memory, shared by every handler of the pod", on(({ pod, c, val }) => {
      const dir = val("CODELLM_RUNTIME_DIR");
      if (!dir) return ["CODELLM_RUNTIME_DIR must be set to a writable directory (the root is read-only)"];
      const mount = (c.volumeMounts ?? []).find((m) => m.mountPath === dir);
      const vol = (pod.volumes ?? []).find((v) => v.name === mount?.name);
      return vol?.emptyDir?.medium === "Memory" && mount.readOnly !== true ? [] : [`${dir} must be a writable emptyDir with medium: Memory`];
    })],
    ["command", "systemd-socket-activate --accept passes exactly the CODELLM_* variables that are set (-E)", on(({ c, env }) => {
      const e = [];
      const cmd = c.command ?? [];
      if (!/(^|\/)systemd-socket-activate$/.test(cmd[0] ?? "")) e.push("command must start systemd-socket-activate");
      if (!cmd.includes("--accept") && !cmd.includes("-a")) e.push("command must pass --accept: one handler per connection");
      if (!/(^|\/)codellm-handler$/.test(cmd.at(-1) ?? "")) e.push("command must end with the handler (/usr/bin/codellm-handler)");
      const listen = cmd.map((a, i) => (a === "-l" || a === "--listen" ? cmd[i + 1] : a.startsWith("--listen=") ? a.slice(9) : null)).filter(Boolean);
      const ports = (c.ports ?? []).map((p) => p.containerPort);
      if (listen.length !== 1 || !ports.includes(Number(String(listen[0]).split(":").at(-1)))) e.push(`command must listen once, on the container port (${listen.join(", ")})`);
      const passed = new Set(cmd.map((a, i) => (a === "-E" || a === "--setenv" ? cmd[i + 1] : a.startsWith("--setenv=") ? a.slice(9) : null)).filter(Boolean));
      const set = Object.keys(env).filter((n) => n.startsWith("CODELLM_"));
      for (const n of set) if (!passed.has(n)) e.push(`env ${n} is set but not passed (-E ${n}): the handler would never see it`);
      for (const n of passed) {
        if (n.includes("=")) e.push(`-E ${n}: pass names only; values belong in env`);
        else if (!(n in env)) e.push(`-E ${n} names an unset variable: it reaches the handler empty`);
      }
      for (const n of set) if (typeof env[n].value !== "string" || env[n].value === "") e.push(`env ${n} must have a non-empty value`);
      return e;
    })],
    ["options", "native sandbox, no debug routes, blocks without the pod's network", on(({ env, val }) => {
      const e = [];
      if (val("CODELLM_SANDBOX") !== undefined && val("CODELLM_SANDBOX") !== "native") e.push("CODELLM_SANDBOX must be native (the default)");
      for (const n of ["CODELLM_DEBUG", "CODELLM_SANDBOX_NETWORK"]) if (n in env) e.push(`${n} must not be set in the pod`);
      if (!val("CODELLM_ALLOWED_PROGRAMS")) e.push("CODELLM_ALLOWED_PROGRAMS must list the interpreters (empty: every run is a 403)");
      const n = Number(val("CODELLM_MAX_CONCURRENT") ?? 4);
      if (!(Number.isInteger(n) && n >= 1)) e.push("CODELLM_MAX_CONCURRENT must be a whole number of slots");
      return e;
    })],
    ["termination", "a pod that leaves keeps its runs until they can end: preStop wait and grace period cover a whole request", on(({ pod, c, val }) => {
      const e = [];
      const secs = (n, d) => Number(val(n) ?? d);
      const longest = secs("CODELLM_HEADER_TIMEOUT", 10) + secs("CODELLM_BODY_TIMEOUT", 30) + secs("CODELLM_TIMEOUT", 240);
      const wait = c.lifecycle?.preStop?.sleep?.seconds;
      const grace = pod.terminationGracePeriodSeconds ?? 30;
      if (!(wait >= longest)) e.push(`lifecycle.preStop.sleep.seconds (${wait}) must be at least header + body timeout + run timeout = ${longest}`);
      if (!(grace >= (wait ?? 0) + 5)) e.push(`terminationGracePeriodSeconds (${grace}) must exceed the preStop wait (${wait})`);
      return e;
    })],
    ["image", "an image that is not pulled from localhost", on(({ c }) =>
      String(c.image).startsWith("localhost/") && !["IfNotPresent", "Never"].includes(c.imagePullPolicy)
        ? ["imagePullPolicy must be IfNotPresent (or Never) for a localhost/ image: :latest defaults to Always, which no node can pull"] : [])],
  ];
}

export function runChecks(set) {
  return CHECKS.map(([id, title, fn]) => ({ id, title, errors: fn(set) }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/kubernetes");
  let failed = 0;
  for (const r of runChecks(loadDir(dir))) {
    for (const e of r.errors) console.log(`${r.id}: ${e}`);
    failed += r.errors.length > 0;
  }
  console.log(failed ? `${failed} check(s) failed` : `ok: ${dir} (Kubernetes API ${API_VERSION}, @kubernetes/client-node ${CLIENT_VERSION})`);
  process.exit(failed ? 1 : 0);
}
