// memwall's estimator as a WebAssembly module (crates/memwall-web): one JSON request in, one
// JSON document (or a Parquet file's bytes) out. The module imports nothing; its five exports
// are described in crates/memwall-web/src/abi.rs.

/** An error memwall answered with: its message names the field and value at fault. */
export class MemwallError extends Error {}

const OK_JSON = 0;
const OK_BYTES = 1;

export class Memwall {
  /** Load the module from `url` (served beside the page; nothing is fetched from elsewhere). */
  static async load(url = "memwall_web.wasm") {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
    const bytes = await response.arrayBuffer();
    const module = await WebAssembly.compile(bytes);
    const m = new Memwall(module);
    await m.restart();
    return m;
  }

  constructor(module) {
    this.module = module;
    this.restarts = -1;
  }

  /** A fresh instance (after a trap the old one's state cannot be trusted). Browsers compile
   * a module this large only asynchronously. */
  async restart() {
    this.exports = (await WebAssembly.instantiate(this.module, {})).exports;
    this.restarts += 1;
  }

  /** Copy `bytes` into the module; returns [pointer, length]. */
  put(bytes) {
    const x = this.exports;
    const p = x.memwall_alloc(bytes.length);
    new Uint8Array(x.memory.buffer, p, bytes.length).set(bytes);
    return [p, bytes.length];
  }

  /** Answer `request` (an object), with `data` (a Uint8Array) for an import. */
  call(request, data = new Uint8Array()) {
    const x = this.exports;
    const [rp, rl] = this.put(new TextEncoder().encode(JSON.stringify(request)));
    const [dp, dl] = this.put(data);
    let code;
    try {
      code = x.memwall_call(rp, rl, dp, dl);
    } catch (e) {
      this.restart();
      throw new MemwallError(`the estimator stopped (${e.message}); it was restarted, drop any model file again`);
    }
    const out = new Uint8Array(x.memory.buffer, x.memwall_out_ptr(), x.memwall_out_len()).slice();
    x.memwall_free(rp, rl);
    x.memwall_free(dp, dl);
    if (code === OK_BYTES) return out;
    const text = new TextDecoder().decode(out);
    if (code === OK_JSON) return JSON.parse(text);
    throw new MemwallError(text);
  }
}
