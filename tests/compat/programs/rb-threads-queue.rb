# Thread, Mutex, Queue, ConditionVariable, thread-local values
q = Queue.new
results = Queue.new
workers = 4.times.map { Thread.new { while (x = q.pop) != :done; results << x * x; end } }
20.times { |i| q << i }
4.times { q << :done }
workers.each(&:join)
sum = 0
sum += results.pop until results.empty?
raise "sum #{sum}" unless sum == (0...20).sum { |i| i * i }
m = Mutex.new
count = 0
10.times.map { Thread.new { 1000.times { m.synchronize { count += 1 } } } }.each(&:join)
raise "count" unless count == 10_000
cv = ConditionVariable.new
ready = false
t = Thread.new { m.synchronize { cv.wait(m) until ready } }
sleep 0.05
m.synchronize { ready = true; cv.signal }
t.join(60) or raise "cv"
puts "OK"
