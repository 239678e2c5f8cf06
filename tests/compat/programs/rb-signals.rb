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
pid = fork { Signal.trap("TERM") { exit!(7) }; sleep 30 }
sleep 0.2
Process.kill("TERM", pid)
raise "term" unless Process.wait2(pid)[1].exitstatus == 7
puts "OK"
