<?php
// The PHP side of store/inspect's tests with real clients: Symfony Lock's
// RedisStore over phpredis (Debian php-symfony-lock, php-redis). Each stdin
// line is JSON {"op": ..., ...}; each reply one JSON line {"event": op,
// "data": {...}}. Locks taken stay held by this process until released.
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

function reply(string $event, array $data = []): void
{
    fwrite(STDOUT, json_encode(['event' => $event, 'data' => (object) $data])."\n");
    fflush(STDOUT);
}

$locks = [];
$factory = null;
reply('ready');
while (($line = fgets(STDIN)) !== false) {
    $msg = json_decode($line, true);
    try {
        switch ($msg['op']) {
            case 'connect':
                [$host, $port] = explode(':', $msg['addr']);
                $redis = new \Redis();
                $redis->connect($host, (int) $port);
                $factory = new LockFactory(new RedisStore($redis));
                reply('connect');
                break;
            case 'acquire': // a new holder (as another process would be) tries once
                $lock = $factory->createLock($msg['resource'], 300.0, false);
                $ok = $msg['shared'] ?? false ? $lock->acquireRead(false) : $lock->acquire(false);
                if ($ok) {
                    $locks[$msg['id']] = $lock;
                }
                reply('acquire', ['acquired' => $ok]);
                break;
            case 'release':
                $locks[$msg['id']]->release();
                unset($locks[$msg['id']]);
                reply('release');
                break;
            default:
                reply('error', ['error' => 'unknown op '.$msg['op']]);
        }
    } catch (\Throwable $e) {
        reply('error', ['error' => get_class($e).': '.$e->getMessage()]);
    }
}
