/**
 * The Python the kernel executor runs in a kernel that does not share the
 * workspace's filesystem: the probe that finds out, and the two halves of
 * shipping the workspace's tracked files to a folder on the kernel's side.
 *
 * The kernel-side folder keeps a manifest (.autoresearch-ship.json: path →
 * mode, git blob id, size, mtime). `plan` compares it with the engine's list,
 * deletes what left the tree, and names the files to send: new, changed, or
 * touched on the kernel's side since they were written. `write` stores files
 * (in parts, for big ones) and records them. Everything outside that folder,
 * the prepared-data cache included, is left alone.
 */
import { CALL_MIME } from './kernel-call';

const SHIP = `
def __autoresearch_ship(op, args, mime, nonce):
    import base64, json, os, shutil, socket
    from IPython.display import display

    def reply(**fields):
        fields["nonce"] = nonce
        display({mime: fields}, raw=True)

    try:
        if op == "probe":
            try:
                with open(args["path"], "r") as f:
                    shared = f.read() == args["token"]
            except OSError:
                shared = False
            reply(ok=True, shared=shared, host=socket.gethostname())
            return
        # Where shipped workspaces live on the kernel's side, unless $AUTORESEARCH_SHIP_DIR says otherwise.
        base = os.environ.get("AUTORESEARCH_SHIP_DIR") or os.path.join(os.path.expanduser("~"), ".autoresearch", "workspaces")
        root = os.path.realpath(os.path.join(base, args["key"]))
        manifest = os.path.join(root, ".autoresearch-ship.json")

        def inside(rel):
            path = os.path.realpath(os.path.join(root, os.path.dirname(rel)))
            if os.path.isabs(rel) or not (path == root or path.startswith(root + os.sep)) or rel == ".autoresearch-ship.json":
                raise ValueError("refusing to write outside the shipped folder: %r" % rel)
            return os.path.join(path, os.path.basename(rel))

        def load():
            try:
                with open(manifest) as f:
                    return json.load(f)
            except (OSError, ValueError):
                return {}

        def save(have):
            tmp = manifest + ".tmp"
            with open(tmp, "w") as f:
                json.dump(have, f)
            os.replace(tmp, manifest)

        def stat(path):
            try:
                st = os.lstat(path)
                return [st.st_size, st.st_mtime_ns]
            except OSError:
                return None

        if op == "plan":
            os.makedirs(root, exist_ok=True)
            have = load()
            want = args["files"]
            removed = 0
            for rel in [r for r in have if r not in want]:
                path = inside(rel)
                if os.path.islink(path) or os.path.isfile(path):
                    os.unlink(path)
                parent = os.path.dirname(path)
                while parent != root and parent.startswith(root) and os.path.isdir(parent) and not os.listdir(parent):
                    os.rmdir(parent)
                    parent = os.path.dirname(parent)
                del have[rel]
                removed += 1
            need = [rel for rel, (mode, blob) in want.items()
                    if have.get(rel, {}).get("id") != [mode, blob] or have[rel].get("stat") != stat(inside(rel))]
            save(have)
            reply(ok=True, root=root, need=need, removed=removed, host=socket.gethostname())
        elif op == "write":
            have = load()
            for f in args["files"]:
                path = inside(f["path"])
                part = path + ".autoresearch-part"
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(part, "ab" if f["offset"] else "wb") as out:
                    out.write(base64.b64decode(f["data"]))
                if not f["last"]:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                if f["mode"] == "120000":
                    with open(part, "rb") as link:
                        target = link.read().decode()
                    os.unlink(part)
                    if os.path.lexists(path):
                        os.unlink(path)
                    os.symlink(target, path)
                else:
                    os.chmod(part, 0o755 if f["mode"] == "100755" else 0o644)
                    os.replace(part, path)
                have[f["path"]] = {"id": [f["mode"], f["blob"]], "stat": stat(path)}
            save(have)
            reply(ok=True)
    except Exception as e:
        reply(ok=False, error="%s: %s" % (type(e).__name__, e))
`;

/** One file, or one part of a big one, as `write` takes it. */
export interface ShipPart {
  path: string;
  mode: string;
  blob: string;
  offset: number;
  last: boolean;
  /** base64 of this part's bytes. */
  data: string;
}

/** Code for one shipping operation; `args` is JSON (valid Python literals: strings, numbers, booleans, lists, objects). */
export function shipCode(op: 'probe' | 'plan' | 'write', args: object): (nonce: string) => string {
  // JSON's true/false are not Python; json.loads of a JSON string literal keeps the snippet valid Python.
  const payload = JSON.stringify(JSON.stringify(args));
  return nonce =>
    `${SHIP}\nimport json as __ar_json\ntry:\n    __autoresearch_ship(${JSON.stringify(op)}, __ar_json.loads(${payload}), ${JSON.stringify(CALL_MIME)}, ${JSON.stringify(nonce)})\nfinally:\n    del __autoresearch_ship, __ar_json\n`;
}
