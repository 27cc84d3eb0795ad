// Package fill sets every field of a value, down to every nested one, to
// something that is not zero. Tests of hand-written codecs use it so that
// a field added to a type without its codec fails them.
package fill

import "reflect"

// Value fills v (settable): strings "x-TYPE", numbers 7 or 1.5, true,
// pointers to filled values, one-element slices and maps.
func Value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x-" + v.Type().Name())
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		Value(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				Value(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		Value(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		Value(k)
		e := reflect.New(v.Type().Elem()).Elem()
		Value(e)
		v.SetMapIndex(k, e)
	default:
		panic("fill: no value for a " + v.Kind().String())
	}
}
