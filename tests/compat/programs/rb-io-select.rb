# IO.select on pipes and sockets, nonblocking reads
require "socket"
r, w = IO.pipe
raise "early" if IO.select([r], nil, nil, 0)
w.write("x")
raise "select" unless IO.select([r], nil, nil, 1)[0] == [r]
a, b = Socket.pair(:UNIX, :STREAM)
begin
  a.read_nonblock(1)
  raise "should block"
rescue IO::WaitReadable
end
b.write("y")
IO.select([a], nil, nil, 1)
raise "nonblock" unless a.read_nonblock(1) == "y"
puts "OK"
