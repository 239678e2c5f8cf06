// TAP: deploy/kubernetes/ passes every check of check.mjs, and each
// check fails on a manifest broken on purpose (the mutations below and
// the files in broken/), so a pass means something. With kubectl on
// PATH, its built-in kustomize also builds the directory (offline) and
// the built objects pass the same checks; without it that test is
// skipped.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { API_VERSION, CLIENT_VERSION, CHECKS, checkSchema, loadDir, parseYaml, runChecks } from "./check.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const deployDir = path.resolve(here, "../../deploy/kubernetes");
let n = 0, failed = 0;
const ok = (pass, title, diag = []) => {
  n += 1;
  if (!pass) failed += 1;
  console.log(`${pass ? "ok" : "not ok"} ${n} - ${title}`);
  for (const d of diag) console.log(`# ${String(d).replace(/\n/g, "\n# ")}`);
};
const skip = (title, why) => {
  n += 1;
  console.log(`ok ${n} - ${title} # SKIP ${why}`);
};

console.log(`# Kubernetes API ${API_VERSION} (models of @kubernetes/client-node ${CLIENT_VERSION})`);
const good = loadDir(deployDir);

// 1. the shipped manifests pass every check
for (const r of runChecks(good)) ok(r.errors.length === 0, `${r.id}: ${r.title}`, r.errors);

// 2. every check catches what it is for: one change to a copy of the
// shipped manifests each, and the check (and message) that must fail
const copy = () => structuredClone(good);
const find = (set, kind) => set.objects.find((o) => o.obj?.kind === kind && !/\.example\./.test(o.file)).obj;
const pod = (set) => find(set, "Deployment").spec.template.spec;
const ctr = (set) => pod(set).containers[0];
const envOf = (set, name) => ctr(set).env.find((e) => e.name === name);
const MUTATIONS = [
  ["an unknown field (procMounts, a typo) in the container's securityContext", "schema", /unknown field "procMounts"/,
    (s) => { ctr(s).securityContext.procMounts = "Unmasked"; }],
  ["an unknown field (hostUser, a typo) in the pod spec", "schema", /unknown field "hostUser"/,
    (s) => { pod(s).hostUser = false; }],
  ["a string where the API wants a boolean (hostUsers: \"false\")", "schema", /hostUsers: must be true or false/,
    (s) => { pod(s).hostUsers = "false"; }],
  ["a container without its required name", "schema", /missing required field "name"/,
    (s) => { delete ctr(s).name; }],
  ["a number where the API wants a string (an env value of 4)", "schema", /value: must be a string/,
    (s) => { envOf(s, "CODELLM_MAX_CONCURRENT").value = 4; }],
  ["a malformed quantity (\"2 Gi\")", "schema", /"2 Gi" is not a quantity/,
    (s) => { ctr(s).resources.requests.memory = "2 Gi"; }],
  ["an unknown kind", "schema", /is not a kind this deployment uses/,
    (s) => { s.objects.push({ file: "x.yaml", index: 0, obj: { apiVersion: "v1", kind: "Pod", metadata: { name: "x" } } }); }],
  ["a missing securityContext item: capabilities.drop", "container.securityContext", /capabilities\.drop must hold "ALL"/,
    (s) => { delete ctr(s).securityContext.capabilities.drop; }],
  ["a missing securityContext item: allowPrivilegeEscalation", "container.securityContext", /allowPrivilegeEscalation must be false/,
    (s) => { delete ctr(s).securityContext.allowPrivilegeEscalation; }],
  ["a missing securityContext item: procMount", "container.securityContext", /procMount must be Unmasked/,
    (s) => { delete ctr(s).securityContext.procMount; }],
  ["a capability added", "container.securityContext", /capabilities\.add must be empty/,
    (s) => { ctr(s).securityContext.capabilities.add = ["SYS_ADMIN"]; }],
  ["a writable root", "container.securityContext", /readOnlyRootFilesystem/,
    (s) => { ctr(s).securityContext.readOnlyRootFilesystem = false; }],
  ["the host's user namespace (hostUsers removed)", "pod.hostUsers", /hostUsers must be false/,
    (s) => { delete pod(s).hostUsers; }],
  ["runAsNonRoot removed", "pod.user", /runAsNonRoot must be true/,
    (s) => { delete pod(s).securityContext.runAsNonRoot; }],
  ["an fsGroup that is not the handler's gid", "pod.user", /fsGroup must equal runAsGroup/,
    (s) => { pod(s).securityContext.fsGroup = 2000; }],
  ["a hostPath volume", "pod.isolation", /no hostPath/,
    (s) => { pod(s).volumes.push({ name: "host", hostPath: { path: "/" } }); }],
  ["the runtime's default seccomp profile", "seccomp", /Localhost/,
    (s) => { pod(s).securityContext.seccompProfile = { type: "RuntimeDefault" }; }],
  ["no readiness probe", "probes", /readinessProbe must be an httpGet of \/healthz/,
    (s) => { delete ctr(s).readinessProbe; }],
  ["a liveness probe on /healthz", "probes", /livenessProbe must not use \/healthz/,
    (s) => { ctr(s).livenessProbe = { httpGet: { path: "/healthz", port: "http" } }; }],
  ["no resources", "resources", /resources\.requests\.cpu must be set/,
    (s) => { delete ctr(s).resources; }],
  ["twice the slots in the same memory", "resources", /below CODELLM_MAX_CONCURRENT/,
    (s) => { envOf(s, "CODELLM_MAX_CONCURRENT").value = "8"; }],
  ["the key in the environment", "api-key", /no Secret in the environment/,
    (s) => { ctr(s).env.push({ name: "KEY", valueFrom: { secretKeyRef: { name: "codellm-api-key", key: "api-key" } } }); }],
  ["the key file readable by everyone (0644)", "api-key", /mode 644/,
    (s) => { pod(s).volumes.find((v) => v.secret).secret.defaultMode = 0o644; }],
  ["the key's volume mounted writable", "api-key", /must be readOnly/,
    (s) => { ctr(s).volumeMounts.find((m) => m.name === "api-key").readOnly = false; }],
  ["CODELLM_NO_AUTH set", "api-key", /CODELLM_NO_AUTH must not be set/,
    (s) => { ctr(s).env.push({ name: "CODELLM_NO_AUTH", value: "1" }); }],
  ["the runtime dir not on an emptyDir", "runtime-dir", /must be a writable emptyDir/,
    (s) => { envOf(s, "CODELLM_RUNTIME_DIR").value = "/var/run/codellm"; }],
  ["a CODELLM_* variable set but not passed with -E", "command", /CODELLM_MAX_BLOCKS is set but not passed/,
    (s) => { ctr(s).env.push({ name: "CODELLM_MAX_BLOCKS", value: "8" }); }],
  ["-E naming a variable that is not set", "command", /-E CODELLM_TIMEOUT names an unset variable/,
    (s) => { ctr(s).env = ctr(s).env.filter((e) => e.name !== "CODELLM_TIMEOUT"); }],
  ["no --accept", "command", /--accept/,
    (s) => { ctr(s).command = ctr(s).command.filter((a) => a !== "--accept"); }],
  ["besteffort sandbox", "options", /CODELLM_SANDBOX must be native/,
    (s) => { ctr(s).env.push({ name: "CODELLM_SANDBOX", value: "besteffort" }); ctr(s).command.splice(-1, 0, "-E", "CODELLM_SANDBOX"); }],
  ["no preStop wait", "termination", /preStop\.sleep\.seconds \(undefined\)/,
    (s) => { delete ctr(s).lifecycle; }],
  ["a grace period shorter than the wait", "termination", /terminationGracePeriodSeconds \(60\)/,
    (s) => { pod(s).terminationGracePeriodSeconds = 60; }],
  ["a localhost/ image pulled Always", "image", /imagePullPolicy must be IfNotPresent/,
    (s) => { ctr(s).imagePullPolicy = "Always"; }],
  ["a Service that selects nothing", "references", /selector does not select the Deployment's pods/,
    (s) => { find(s, "Service").spec.selector = { "app.kubernetes.io/name": "codelm" }; }],
  ["an autoscaler aimed at another Deployment", "references", /scaleTargetRef is not the Deployment/,
    (s) => { find(s, "HorizontalPodAutoscaler").spec.scaleTargetRef.name = "other"; }],
  ["a NodePort Service", "service", /keep it inside the cluster/,
    (s) => { find(s, "Service").spec.type = "NodePort"; }],
  ["a Namespace without its Pod Security label", "namespace", /pod-security\.kubernetes\.io\/enforce/,
    (s) => { delete find(s, "Namespace").metadata.labels["pod-security.kubernetes.io/enforce"]; }],
  ["the example Secret applied", "kustomization", /secret\.example\.yaml is an example/,
    (s) => { s.kustomization.obj.resources.push("secret.example.yaml"); }],
  ["a key instead of the placeholder in the example Secret", "secret", /must be a REPLACE-\.\.\. placeholder/,
    (s) => { s.objects.find((o) => o.obj.kind === "Secret").obj.stringData["api-key"] = "c2VjcmV0"; }],
  ["a manifest that kustomization.yaml does not apply", "kustomization", /neither listed in resources/,
    (s) => { s.kustomization.obj.resources = s.kustomization.obj.resources.filter((r) => r !== "pdb.yaml"); }],
];
for (const [what, id, re, mutate] of MUTATIONS) {
  if (!CHECKS.some(([cid]) => cid === id)) {
    ok(false, `rejects ${what}`, [`no check ${id}`]);
    continue;
  }
  const s = copy();
  mutate(s);
  const r = runChecks(s).find((x) => x.id === id);
  ok(r.errors.some((e) => re.test(e)), `rejects ${what} (${id})`, r.errors.length ? r.errors : ["the check passed"]);
}

// 3. whole files broken on purpose: each names the error it must give
const brokenDir = path.join(here, "broken");
for (const f of fs.readdirSync(brokenDir).filter((x) => x.endsWith(".yaml")).sort()) {
  const text = fs.readFileSync(path.join(brokenDir, f), "utf8");
  const re = new RegExp(/^# expect: (.+)$/m.exec(text)?.[1] ?? "^$");
  const { docs, errors } = parseYaml(text, f);
  const all = [...errors, ...docs.flatMap((obj, index) => checkSchema({ file: f, index, obj }))];
  ok(all.some((e) => re.test(e)), `broken/${f} is refused (${re.source})`, all.length ? all : ["no error"]);
}

// 4. the command: exit 0 on the shipped directory, 1 on a copy with one
// line of the Deployment removed
const cli = (dir) => spawnSync(process.execPath, [path.join(here, "check.mjs"), dir], { encoding: "utf8" });
const r0 = cli(deployDir);
ok(r0.status === 0, "node check.mjs deploy/kubernetes exits 0", [r0.stdout.trim(), r0.stderr.trim()].filter(Boolean));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "codellm-k8s-"));
try {
  for (const f of fs.readdirSync(deployDir)) fs.copyFileSync(path.join(deployDir, f), path.join(tmp, f));
  const dep = path.join(tmp, "deployment.yaml");
  const text = fs.readFileSync(dep, "utf8");
  const broken = text.replace(/^ *allowPrivilegeEscalation: false\n/m, "");
  fs.writeFileSync(dep, broken);
  const r1 = cli(tmp);
  ok(broken !== text && r1.status === 1 && /allowPrivilegeEscalation must be false/.test(r1.stdout),
    "node check.mjs exits 1 on a copy whose Deployment lacks allowPrivilegeEscalation", [r1.stdout.trim()]);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

// 5. kustomize (kubectl's, offline) builds it, and what it builds passes
const kubectl = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" });
if (kubectl.error || kubectl.status !== 0) {
  skip("kubectl kustomize builds deploy/kubernetes and its output passes the checks", "kubectl not installed");
} else {
  const b = spawnSync("kubectl", ["kustomize", deployDir], { encoding: "utf8", timeout: 60000 });
  const e = [];
  if (b.status !== 0) e.push(`kubectl kustomize: ${b.stderr.trim()}`);
  else {
    const { docs, errors } = parseYaml(b.stdout, "kustomize-build");
    e.push(...errors);
    const set = { dir: deployDir, errors: [], kustomization: null, objects: docs.map((obj, index) => ({ file: "kustomize-build", index, obj })) };
    for (const r of runChecks(set)) if (!["kustomization", "secret"].includes(r.id)) e.push(...r.errors.map((x) => `${r.id}: ${x}`));
    for (const o of docs) if (o.kind !== "Namespace" && o.metadata?.namespace !== "codellm") e.push(`${o.kind}/${o.metadata?.name}: not in namespace codellm`);
    if (docs.length !== good.kustomization.obj.resources.length) e.push(`built ${docs.length} objects for ${good.kustomization.obj.resources.length} resources`);
  }
  ok(e.length === 0, `kubectl kustomize builds deploy/kubernetes and its output passes the checks (${kubectl.stdout.split("\n")[0].trim()})`, e);
}

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
