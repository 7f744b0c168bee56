import nock from 'nock';

// No test reaches the network: everything but loopback is refused (style.md B11.3).
nock.disableNetConnect();
nock.enableNetConnect(/^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/);
