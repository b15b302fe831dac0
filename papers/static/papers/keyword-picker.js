"use strict";
// The action bar's keywords box (papers.pickers.KeywordAutocomplete): the admin's select2
// over its autocomplete endpoint, like `autocomplete_fields`, but keywords travel by name
// (the endpoint answers ids) and a keyword not in the library yet can be typed in.
{
    const $ = django.jQuery;

    $(function () {
        $(".keyword-autocomplete").each(function (i, element) {
            $(element).select2({
                tags: true,
                tokenSeparators: [","],
                createTag: (params) => {
                    const term = params.term.trim();
                    return term ? { id: term, text: term } : null;
                },
                ajax: {
                    data: (params) => ({
                        term: params.term,
                        page: params.page,
                        app_label: element.dataset.appLabel,
                        model_name: element.dataset.modelName,
                        field_name: element.dataset.fieldName,
                    }),
                    processResults: (data) => ({
                        results: data.results.map((item) => ({ id: item.text, text: item.text })),
                        pagination: data.pagination,
                    }),
                },
            });
        });
    });
}
