# PTY.spawn and PTY.open, IO#winsize via io/console
require "pty"
require "io/console"
out = +""
PTY.spawn("sh", "-c", "tty; stty size") do |r, w, pid|
  begin
    r.each_line { |l| out << l }
  rescue Errno::EIO
  end
  Process.wait(pid)
end
puts out
raise out unless out.include?("/dev/pts/")
m, s = PTY.open
s.winsize = [30, 90]
raise "winsize" unless s.winsize == [30, 90]
m.write("typed\n")
raise "pty read" unless s.gets == "typed\n"
puts "OK"
