# File.open("/dev/stdout"), /dev/stderr, $stderr, STDIN.read, /dev/fd
File.open("/dev/stdout", "w") { |f| f.puts "to /dev/stdout" }
File.write("/dev/stderr", "to /dev/stderr\n")
$stderr.puts "to $stderr"
raise "stdin" unless File.read("/dev/stdin") == ""
IO.popen(["cat", "/dev/fd/0"], "r+") { |io| io.write("fd0"); io.close_write; raise "fd" unless io.read == "fd0" }
$stdout.flush
puts "OK"
