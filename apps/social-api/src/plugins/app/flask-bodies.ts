import { errorCodes } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Request bodies as the Flask backend reads them: an empty body (the React client sends
 * `Content-Type: application/json` with no body on follow, unfollow and logout) is no body, and a
 * route that takes a body then validates `{}` (so required fields say "Missing data for required
 * field." instead of a type error). Malformed JSON stays a 400 without `errors`. An empty body of
 * any other type is no body too (`fetch` sends `text/plain` with `body: ''`); content in any other
 * type is a 415.
 */
export default fp(
  async function flaskBodies(app) {
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
      return parseJson(request, body as string, done);
    });
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
      if ((body as Buffer).length === 0) return done(null, undefined);
      return done(
        new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type'] ?? ''),
        undefined,
      );
    });
    app.addHook('onRoute', (route) => {
      if (!route.schema?.body) return;
      const hooks = [route.preValidation ?? []].flat();
      route.preValidation = [
        async (request) => {
          if (request.body === undefined || request.body === null) request.body = {};
        },
        ...hooks,
      ];
    });
  },
  { name: 'flask-bodies', fastify: '5.x' },
);
