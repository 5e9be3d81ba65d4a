import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { defaultErrorResponses, errorHandling } from '../../src';
import { errorHandlingOptions, plainDialect } from './dialect';

test('error-handling renders a thrown error, an unknown path and a wrong method in the dialect', async () => {
  const app = Fastify({ logger: false });
  await app.register(errorHandling, errorHandlingOptions);
  app.get('/boom', async () => {
    throw new Error('secret detail');
  });
  const boom = await app.inject('/boom');
  expect(boom.statusCode).toBe(500);
  expect(boom.headers['content-type']).toBe(plainDialect.contentType);
  expect(boom.json()).toEqual({
    status: 500,
    title: 'Internal Server Error',
    detail: 'An unexpected error occurred',
  });
  expect((await app.inject('/nowhere')).json()).toEqual({
    status: 404,
    title: 'Not Found',
    detail: 'No such path: GET /nowhere',
  });
  const wrongMethod = await app.inject({ method: 'DELETE', url: '/boom' });
  expect(wrongMethod.statusCode).toBe(405);
  expect(wrongMethod.headers.allow).toBe('GET, HEAD');
  expect(app.errorDialect).toBe(plainDialect);
  await app.close();
});

test('defaultErrorResponses adds the always-possible statuses to routes that document errors', async () => {
  const app = Fastify();
  await app.register(errorHandling, errorHandlingOptions);
  await app.register(defaultErrorResponses, { statuses: [500, 503] });
  const answer = Type.Object({});
  const routes: Record<string, Record<string, unknown>> = {};
  app.addHook('onRoute', (route) => {
    if (route.method === 'GET') routes[route.url] = route.schema?.response as Record<string, unknown>;
  });
  app.get('/api', { schema: { response: { 200: answer, 404: { description: 'mine' } } } }, async () => ({}));
  app.get('/page', { schema: { response: { 200: answer } } }, async () => ({}));
  await app.ready();
  expect(Object.keys(routes['/api'])).toEqual(['200', '404', '500', '503']);
  expect(routes['/api'][404]).toEqual({ description: 'mine' });
  expect(Object.keys(routes['/page'])).toEqual(['200']);
  await app.close();
});
