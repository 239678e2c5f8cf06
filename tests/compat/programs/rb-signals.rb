# Signal.trap, Process.kill on self, Timeout, at_exit
require "timeout"
got = []
Signal.trap("USR1") { got << :usr1 }
Process.kill("USR1", Process.pid)
sleep 0.1
raise "usr1" unless got == [:usr1]
begin
  Timeout.timeout(0.1) { sleep 5 }
  raise "no timeout"
rescue Timeout::Error
end
r, w = IO.pipe
pid = fork { r.close; Signal.trap("TERM") { exit!(7) }; w.write("!"); w.close; sleep 30 }
w.close
raise "no trap in the child" unless r.read(1) == "!"   # TERM before the trap would kill it
r.close
Process.kill("TERM", pid)
raise "term" unless Process.wait2(pid)[1].exitstatus == 7
puts "OK"
