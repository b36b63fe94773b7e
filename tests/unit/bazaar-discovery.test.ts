import { describe, expect, it } from 'vitest';
import { isValidRouteTemplate, rankResources } from '../../servers/src/services/facilitator/discovery';

describe('catalog poisoning', () => {
  it('route templates follow the reference rules', () => {
    expect(isValidRouteTemplate('/api/course/:courseId')).toBe(true);
    for (const bad of ['', 'api', '/../x', '/%2e%2e/x', '/%252e%252e/x', '/x?y', 'http://evil/x', '/a://b'])
      expect(isValidRouteTemplate(bad), bad).toBe(false);
  });

  it('search weights name and path above description, rarer words above common ones', () => {
    const item = (resource: string, description: string) => ({
      resource,
      type: 'http',
      x402Version: 2,
      accepts: [],
      lastUpdated: '2026-01-01T00:00:00.000Z',
      description,
    });
    const ranked = rankResources(
      [
        item('https://a.example/api/quiz', 'a lesson quiz'),
        item('https://a.example/api/lesson', 'full lesson'),
        item('https://a.example/api/other', 'unrelated'),
      ],
      'lesson',
    );
    expect(ranked.map((r) => r.resource)).toEqual(['https://a.example/api/lesson', 'https://a.example/api/quiz']);
  });
});
