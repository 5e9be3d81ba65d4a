import Fastify from 'fastify';
import { shutdown } from '../../src';

test('shutdown: once leaving, answers close their connection and app.leaving says so', async () => {
  const app = Fastify();
  await app.register(shutdown);
  app.get('/things', async () => ({}));
  expect(app.leaving).toBe(false);
  expect((await app.inject('/things')).headers.connection).not.toBe('close');
  app.beginLeaving();
  expect(app.leaving).toBe(true);
  expect((await app.inject('/things')).headers.connection).toBe('close');
  await app.close();
});
