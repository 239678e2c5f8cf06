# fork, Process.wait2, exit statuses, Process.kill, waitall, at_exit in children
pids = 4.times.map { |i| fork { exit!(i) } }
codes = pids.map { |p| Process.wait2(p)[1].exitstatus }
raise "codes #{codes}" unless codes.sort == [0, 1, 2, 3]
pid = fork { sleep 30 }
Process.kill(:TERM, pid)
_, st = Process.wait2(pid)
raise "not signaled" unless st.signaled? && st.termsig == 15
3.times { fork { sleep 0.05 } }
raise "waitall" unless Process.waitall.size == 3
puts "forked #{pids.size + 4} children"
puts "OK"
