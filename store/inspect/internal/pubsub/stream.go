package pubsub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stream delivers, converted, the messages of its pattern subscriptions
// and of the sharded channels its Subs follow, until closed. It never
// slows the subscriptions down: when the reader falls behind by more than
// the buffer, new values are dropped and counted. After a connection loss
// go-redis reconnects and subscribes again; messages published while
// disconnected are lost, as with any Redis pub/sub.
type Stream[T any] struct {
	ch      chan T
	ps      *redis.PubSub
	shard   *Subs // nil without sharded pub/sub
	conv    func(*redis.Message, time.Time) (T, bool)
	closed  func()
	cancel  context.CancelFunc // ends shard's connections
	stop    chan struct{}
	exited  chan struct{}
	dropped atomic.Int64

	stopOnce sync.Once
	psOnce   sync.Once
	psErr    error
}

// Open pattern-subscribes on rdb and returns once Redis has confirmed the
// subscriptions, so a message published after it returns is delivered.
// With sharded (the Cluster client, when it has sharded pub/sub) it also
// follows the channels given to Shard().SetWant, and a message that
// arrives both ways is delivered once. conv turns a message into a value
// (false: none); closed runs once the subscriptions are closed. The stream
// ends at Close or when ctx ends; buffer bounds the values not yet read.
func Open[T any](ctx context.Context, rdb redis.UniversalClient, patterns []string, sharded *redis.ClusterClient,
	buffer int, conv func(*redis.Message, time.Time) (T, bool), closed func()) (*Stream[T], error) {
	s := &Stream[T]{ch: make(chan T, buffer), conv: conv, closed: closed,
		stop: make(chan struct{}), exited: make(chan struct{})}
	shardCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	if sharded != nil {
		s.shard = New(shardCtx, sharded, buffer, &s.dropped)
	}
	ps := rdb.PSubscribe(ctx, patterns...)
	for confirmed := 0; confirmed < len(patterns); {
		msg, err := ps.Receive(ctx)
		if err != nil {
			cancel()
			ps.Close()
			return nil, err
		}
		if _, ok := msg.(*redis.Subscription); ok {
			confirmed++
		}
	}
	s.ps = ps
	var shardOut <-chan *redis.Message // nil: never ready
	if s.shard != nil {
		shardOut = s.shard.Out()
		s.shard.Start()
	}
	go s.run(ctx, ps.Channel(), shardOut, buffer)
	return s, nil
}

// Values is the stream's channel; it is closed when the stream ends.
func (s *Stream[T]) Values() <-chan T { return s.ch }

// Dropped is the number of values lost because the reader was too slow.
func (s *Stream[T]) Dropped() int64 { return s.dropped.Load() }

// Shard is the sharded subscriptions; nil without sharded pub/sub.
func (s *Stream[T]) Shard() *Subs { return s.shard }

// Close stops the subscriptions and waits for their goroutines to finish.
// Calling it again returns the first result.
func (s *Stream[T]) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.exited
	return s.closePubSub()
}

func (s *Stream[T]) closePubSub() error {
	s.psOnce.Do(func() {
		s.psErr = s.ps.Close()
		s.cancel()
		if s.closed != nil {
			s.closed()
		}
		if s.shard != nil {
			s.shard.Wait()
		}
	})
	return s.psErr
}

func (s *Stream[T]) run(ctx context.Context, msgs, sharded <-chan *redis.Message, buffer int) {
	defer close(s.exited)
	defer close(s.ch)
	defer func() {
		s.closePubSub()
		// go-redis's reader may be blocked handing us a message; drain until
		// it sees the closed PubSub and closes msgs, so it does not linger.
		for range msgs {
		}
	}()
	dedup := NewDedup(4 * buffer)
	for {
		var m *redis.Message
		isSharded := false
		select {
		case <-s.stop:
			return
		case <-ctx.Done():
			return
		case m = <-sharded:
			isSharded = true
		case classic, ok := <-msgs:
			if !ok {
				return
			}
			m = classic
		}
		now := time.Now()
		v, ok := s.conv(m, now)
		if !ok {
			continue
		}
		// Only a stream that hears both ways can get two copies.
		if s.shard != nil && dedup.Duplicate(m, isSharded, now) {
			continue
		}
		select {
		case s.ch <- v:
		default:
			s.dropped.Add(1)
		}
	}
}
