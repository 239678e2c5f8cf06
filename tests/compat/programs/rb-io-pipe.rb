# IO.pipe between processes, IO.popen, backticks, system, spawn with redirections
r, w = IO.pipe
pid = fork do
  r.close
  w.puts "from child #{Process.pid}"
  w.close
end
w.close
line = r.gets
Process.wait(pid)
raise line unless line.start_with?("from child")
raise "popen" unless IO.popen(["sort"], "r+") { |io| io.write("b\na\n"); io.close_write; io.read } == "a\nb\n"
raise "backticks" unless `echo hi | tr a-z A-Z` == "HI\n"
raise "system" unless system("test 1 -eq 1")
raise "system false" if system("exit 3")
raise "status" unless $?.exitstatus == 3
pid = spawn("echo spawned > spawned.txt")
Process.wait(pid)
raise "spawn" unless File.read("spawned.txt") == "spawned\n"
puts "OK"
