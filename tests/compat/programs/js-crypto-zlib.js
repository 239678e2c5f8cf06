// crypto (hashes, hmac, random, scrypt, keypairs, AES) and zlib (gzip, deflate, brotli)
const crypto = require("crypto");
const zlib = require("zlib");
const assert = require("assert");

assert.strictEqual(crypto.createHash("sha256").update("abc").digest("hex").slice(0, 8), "ba7816bf");
assert.strictEqual(crypto.randomBytes(16).length, 16);
assert.ok(crypto.randomUUID());
const key = crypto.scryptSync("pw", "salt", 32);
const iv = crypto.randomBytes(16);
const c = crypto.createCipheriv("aes-256-cbc", key, iv);
const enc = Buffer.concat([c.update("secret"), c.final()]);
const d = crypto.createDecipheriv("aes-256-cbc", key, iv);
assert.strictEqual(Buffer.concat([d.update(enc), d.final()]).toString(), "secret");
const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
const sig = crypto.sign(null, Buffer.from("m"), privateKey);
assert.ok(crypto.verify(null, Buffer.from("m"), publicKey, sig));
const data = Buffer.from("zip me ".repeat(1000));
assert.ok(zlib.gunzipSync(zlib.gzipSync(data)).equals(data));
assert.ok(zlib.inflateSync(zlib.deflateSync(data)).equals(data));
assert.ok(zlib.brotliDecompressSync(zlib.brotliCompressSync(data)).equals(data));
zlib.gzip(data, (err, z) => {
  assert.ifError(err);
  assert.ok(z.length < data.length);
  console.log("OK");
});
