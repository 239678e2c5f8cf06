# Etc.getpwuid, Etc.getlogin, Etc.nprocessors, Etc.uname, ENV, Dir.home
require "etc"
pw = Etc.getpwuid(Process.uid)
puts "user #{pw.name} #{pw.uid} #{pw.dir}"
raise "grp" unless Etc.getgrgid(Process.gid).name
raise "nproc" unless Etc.nprocessors >= 1
u = Etc.uname
raise "uname" unless u[:sysname] == "Linux"
raise "home" unless Dir.home == ENV["HOME"]
raise "root" unless Etc.getpwnam("root").uid == 0
puts "sysconfdir #{Etc.sysconfdir}"
puts "OK"
