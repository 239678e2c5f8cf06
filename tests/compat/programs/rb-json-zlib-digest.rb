# json, zlib, digest, openssl, time zones, Marshal to a file
require "json"
require "zlib"
require "digest"
require "openssl"
require "time"
data = { "a" => [1, 2, 3], "b" => "text" }
raise "json" unless JSON.parse(JSON.generate(data)) == data
Zlib::GzipWriter.open("x.gz") { |gz| gz.write("gz" * 100) }
raise "gzip" unless Zlib::GzipReader.open("x.gz", &:read) == "gz" * 100
raise "sha" unless Digest::SHA256.hexdigest("abc").start_with?("ba7816bf")
raise "hmac" unless OpenSSL::HMAC.hexdigest("SHA256", "k", "m").size == 64
ENV["TZ"] = "Asia/Tokyo"
raise "tz" unless Time.at(0).hour == 9
File.binwrite("m.bin", Marshal.dump(data))
raise "marshal" unless Marshal.load(File.binread("m.bin")) == data
puts "OK"
