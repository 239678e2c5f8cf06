# /etc/os-release, uname, hostname, /proc reads from ruby
info = File.readlines("/etc/os-release", chomp: true).map { |l| l.split("=", 2) }.to_h
puts info["PRETTY_NAME"]
raise "id" unless info["ID"]
puts `uname -a`
raise "cpuinfo" unless File.read("/proc/cpuinfo").include?("processor")
raise "meminfo" unless File.read("/proc/meminfo") =~ /MemTotal/
puts "OK"
