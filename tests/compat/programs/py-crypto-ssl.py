# hashlib, hmac, secrets, ssl default context (loads the CA store), a TLS-less SSL object
import hashlib
import hmac
import secrets
import ssl

assert hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf")
assert hashlib.md5(b"", usedforsecurity=False).hexdigest() == "d41d8cd98f00b204e9800998ecf8427e"
assert hashlib.scrypt(b"pw", salt=b"salt", n=16, r=8, p=1, dklen=16)
assert hmac.compare_digest(hmac.new(b"k", b"m", "sha1").digest(), hmac.new(b"k", b"m", "sha1").digest())
assert len(secrets.token_hex(16)) == 32
ctx = ssl.create_default_context()
stats = ctx.cert_store_stats()
print("openssl", ssl.OPENSSL_VERSION, "CA certs", stats["x509_ca"])
assert stats["x509_ca"] > 10, stats
assert ssl.get_default_verify_paths().openssl_cafile
print("OK")
