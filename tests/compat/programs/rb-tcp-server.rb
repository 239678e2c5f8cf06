# TCPServer/TCPSocket on 127.0.0.1 and ::1, UDPSocket, Socket.getaddrinfo('localhost')
require "socket"
srv = TCPServer.new("127.0.0.1", 0)
port = srv.addr[1]
t = Thread.new { c = srv.accept; c.puts(c.gets.upcase); c.close }
s = TCPSocket.new("127.0.0.1", port)
s.puts "ruby tcp"
raise "tcp" unless s.gets == "RUBY TCP\n"
s.close
t.join
srv6 = TCPServer.new("::1", 0)
t6 = Thread.new { c = srv6.accept; c.write("v6"); c.close }
raise "v6" unless TCPSocket.new("::1", srv6.addr[1]).read == "v6"
t6.join
u = UDPSocket.new
u.bind("127.0.0.1", 0)
v = UDPSocket.new
v.send("dgram", 0, "127.0.0.1", u.addr[1])
raise "udp" unless u.recvfrom(100)[0] == "dgram"
raise "gai" if Socket.getaddrinfo("localhost", nil).empty?
puts "hostname #{Socket.gethostname}"
puts "OK"
