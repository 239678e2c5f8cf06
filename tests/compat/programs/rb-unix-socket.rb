# UNIXServer/UNIXSocket on a path, UNIXSocket.pair with send_io
require "socket"
path = File.join(Dir.pwd, "r.sock")
srv = UNIXServer.new(path)
t = Thread.new { c = srv.accept; c.write(c.read(4).reverse); c.close }
c = UNIXSocket.new(path)
c.write("abcd")
raise "unix" unless c.read == "dcba"
t.join
a, b = UNIXSocket.pair
File.write("f.txt", "sent io")
a.send_io(File.open("f.txt"))
raise "send_io" unless b.recv_io.read == "sent io"
puts "OK"
